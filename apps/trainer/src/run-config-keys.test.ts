import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAlgorithm } from '@troupe/prime-rl';
import { ConfigError } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { parseRunConfig, RunConfigError, readRunConfigFile, underField } from './run-config.ts';

describe('readRunConfigFile', () => {
  it('refuses a [__proto__] table (TOML) or a "__proto__" key (JSON), naming it, instead of applying it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-run-config-'));
    for (const [name, text, at] of [
      ['a.toml', 'max_steps = 2\n[__proto__]\ncheckpoint_every = 1\n', '__proto__'],
      ['b.toml', '[policy]\nd_model = 8\n[policy.__proto__]\nlayers = 9\n', 'policy.__proto__'],
      ['c.json', '{"trainer": {"__proto__": {"lr": 1}}}', 'trainer.__proto__'],
    ] as const) {
      const path = join(dir, name);
      writeFileSync(path, text);
      const error = await readRunConfigFile(path).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunConfigError);
      expect((error as Error).message).toBe(
        `${path}: ${at}: a "__proto__" key is refused (it would set a prototype, not a field)`,
      );
    }
  });
});

describe('run config key style', () => {
  it('reads a snake_case run config as is; a camelCase key still works, warned once naming the new key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-run-config-'));
    const toml = (keys: string) => `max_steps = 2\n[[train.source]]\nenv = "proposer-solver"\n${keys}\n`;
    writeFileSync(
      join(dir, 'new.toml'),
      toml('group_size = 4\nalgorithm = { type = "hierarchical-grpo", episode_agents = ["solver"] }'),
    );
    writeFileSync(
      join(dir, 'old.toml'),
      toml('groupSize = 4\nalgorithm = { type = "hierarchical-grpo", episodeAgents = ["solver"] }'),
    );
    const warnings: string[] = [];
    const listener = (warning: Error & { code?: string }) => {
      if (warning.code === 'TROUPE_CONFIG_KEY') warnings.push(warning.message);
    };
    process.on('warning', listener);
    try {
      const fresh = parseRunConfig(await readRunConfigFile(join(dir, 'new.toml')));
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
      const old = parseRunConfig(await readRunConfigFile(join(dir, 'old.toml')));
      await readRunConfigFile(join(dir, 'old.toml'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(old).toEqual(fresh);
      expect(old.train.source[0]?.algorithm).toEqual({ type: 'hierarchical-grpo', episodeAgents: ['solver'] });
      expect(warnings).toEqual([
        expect.stringMatching(/old\.toml: config key "groupSize" is deprecated: write "group_size"/),
        expect.stringMatching(/old\.toml: config key "episodeAgents" is deprecated: write "episode_agents"/),
      ]);
    } finally {
      process.off('warning', listener);
    }
  });

  it('names a bad field by its snake_case path, in the message and as ConfigError.path', () => {
    let error: unknown;
    try {
      parseRunConfig({ train: { source: [{ env: 'x', group_size: 0 }] }, policy: { d_model: -1 } });
    } catch (caught) {
      error = caught;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    const issues = (error as ConfigError).issues?.map((issue) => issue.path);
    expect(issues).toEqual(expect.arrayContaining(['train.source[0].group_size', 'policy.d_model']));
    expect((error as Error).message).toMatch(/policy\.d_model: /);
  });

  it("names every bad field of a source's algorithm under the source, as the file spells it", () => {
    let error: unknown;
    try {
      createAlgorithm({ type: 'opd', teacher: { baseUrl: 'ftp://h', model: 'm', timeoutMs: -1 } });
    } catch (caught) {
      error = underField('train.source[1]', caught);
    }
    const paths = (error as ConfigError).issues?.map((issue) => issue.path);
    expect(paths).toEqual(['train.source[1].algorithm.teacher.base_url', 'train.source[1].algorithm.teacher.timeout_ms']);
    expect((error as ConfigError).path).toBe('train.source[1].algorithm.teacher.base_url');
    expect((error as Error).message).toMatch(/; train\.source\[1\]\.algorithm\.teacher\.timeout_ms: /);
    expect((error as Error).message).not.toMatch(/baseUrl|timeoutMs/);
    const unknown = underField(
      'train.source[0]',
      (() => {
        try {
          createAlgorithm({ type: 'ppo' });
        } catch (caught) {
          return caught;
        }
      })(),
    );
    expect(unknown.path).toBe('train.source[0].algorithm.type');
    expect(unknown.message).toMatch(/^train\.source\[0\]\.algorithm\.type: unknown algorithm 'ppo'/);
  });
});
