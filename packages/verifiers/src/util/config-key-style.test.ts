import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/troupe-error.ts';
import { normalizeConfigKeys, normalizeSetPath, normalizeSetValue, snakeConfigKeys } from './config-keys.ts';

describe('config key style (snake_case in files, camelCase in the TypeScript API)', () => {
  it('reads snake_case keys as the API spells them, silently', () => {
    const warnings: string[] = [];
    const config = normalizeConfigKeys(
      { num_tasks: 3, env: { id: 'agentic-judge', task_weight: 0, solver: { max_turns: 16 } } },
      { where: 'eval.toml', warn: (m) => warnings.push(m) },
    );
    expect(config).toEqual({ numTasks: 3, env: { id: 'agentic-judge', taskWeight: 0, solver: { maxTurns: 16 } } });
    expect(warnings).toEqual([]);
  });

  it('still reads a camelCase key, warning once per key with the new spelling', () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    const raw = { numTasks: 3, env: { a: { invalidRetries: 1 }, b: { invalidRetries: 2 } } };
    expect(normalizeConfigKeys(raw, { where: 'old.toml', warn })).toEqual({
      numTasks: 3,
      env: { a: { invalidRetries: 1 }, b: { invalidRetries: 2 } },
    });
    normalizeConfigKeys({ numTasks: 4 }, { where: 'again.toml', warn });
    expect(warnings).toEqual([
      'old.toml: config key "numTasks" is deprecated: write "num_tasks" (config files use snake_case; the camelCase spelling will be refused in a later release)',
      'old.toml: config key "invalidRetries" is deprecated: write "invalid_retries" (config files use snake_case; the camelCase spelling will be refused in a later release)',
    ]);
  });

  it('refuses one key given in both spellings, naming it', () => {
    let error: unknown;
    try {
      normalizeConfigKeys({ policy: { d_model: 32, dModel: 64 } }, { where: 'run.toml', warn: false });
    } catch (caught) {
      error = caught;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).path).toBe('policy.d_model');
    expect((error as Error).message).toMatch(/run\.toml: policy\.d_model: given twice, as "d_model" and "dModel"/);
  });

  it('keeps data tables and chosen names verbatim', () => {
    const raw = {
      client: { headers: { 'X-Api_key': 'k' } },
      sampling: { extra: { chat_template_kwargs: { enable_thinking: false } } },
      roles: { red_team: { max_turns: 2 } },
      env: { solver: { runtime: { env: { MY_VAR: '1', my_var: '2' } } } },
    };
    expect(normalizeConfigKeys(raw, { warn: false })).toEqual({
      client: { headers: { 'X-Api_key': 'k' } },
      sampling: { extra: { chat_template_kwargs: { enable_thinking: false } } },
      roles: { red_team: { maxTurns: 2 } },
      env: { solver: { runtime: { env: { MY_VAR: '1', my_var: '2' } } } },
    });
  });

  it("keeps an eval config's role names under env as written, in files, config.json and --set paths", () => {
    const file = { env: { id: 'red-blue', num_rounds: 2, red_team: { max_turns: 3 }, blue_team: { harness: 'bash' } } };
    const api = normalizeConfigKeys(file, { warn: false });
    expect(api).toEqual({ env: { id: 'red-blue', numRounds: 2, red_team: { maxTurns: 3 }, blue_team: { harness: 'bash' } } });
    expect(snakeConfigKeys(api)).toEqual(file);
    expect(normalizeSetPath('env.red_team.max_turns', { warn: false })).toBe('env.red_team.maxTurns');
    expect(normalizeSetPath('env.num_rounds', { warn: false })).toBe('env.numRounds');
  });

  it("reads the keys of a table given to --set as a file's keys at that place", () => {
    expect(
      normalizeSetValue('env.agent.runtime', { id: 'docker', socket_path: '/s', env: { MY_VAR: '1' } }, { warn: false }),
    ).toEqual({
      id: 'docker',
      socketPath: '/s',
      env: { MY_VAR: '1' },
    });
    expect(normalizeSetValue('client.headers', { 'X-Api_key': 'k' }, { warn: false })).toEqual({ 'X-Api_key': 'k' });
    expect(normalizeSetValue('env.red_team', { max_turns: 2 }, { warn: false })).toEqual({ maxTurns: 2 });
    expect(normalizeSetValue('num_tasks', 3)).toBe(3);
  });

  it('writes a config back as a file spells it, and --set paths take either spelling', () => {
    const api = { numTasks: 3, train: { source: [{ groupSize: 8, algorithm: { episodeAgents: ['solver'] } }] } };
    const file = snakeConfigKeys(api);
    expect(file).toEqual({ num_tasks: 3, train: { source: [{ group_size: 8, algorithm: { episode_agents: ['solver'] } }] } });
    expect(normalizeConfigKeys(file, { warn: () => expect.unreachable('no warning for snake_case') })).toEqual(api);
    const warnings: string[] = [];
    expect(normalizeSetPath('train.source.0.group_size')).toBe('train.source.0.groupSize');
    expect(normalizeSetPath('policy.maxTokensSet', { warn: (m) => warnings.push(m) })).toBe('policy.maxTokensSet');
    expect(warnings).toEqual([expect.stringMatching(/^--set: config key "maxTokensSet" is deprecated: write "max_tokens_set"/)]);
  });
});
