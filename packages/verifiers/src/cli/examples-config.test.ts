import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { deepMerge } from '../agent/agent-config.ts';
import { readConfigFile } from '../eval/eval-config.ts';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');
const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.toml'));

function validate(configFile: string): Promise<NodeProcessResult> {
  return runNode(['--import', 'tsx', cli, 'validate', '-f', configFile], { cwd: root });
}

describe('deepMerge', () => {
  it('merges a TOML table (null prototype) into defaults as it merges the same JSON object', () => {
    const defaults = { harness: 'null', maxTurns: 8, trainable: false };
    const table = parseToml('[user]\nmodel = "m"\n').user;
    expect(Object.getPrototypeOf(table)).toBe(null);
    expect(deepMerge(defaults, table)).toEqual({ harness: 'null', maxTurns: 8, trainable: false, model: 'm' });
    expect(deepMerge(defaults, table)).toEqual(deepMerge(defaults, { model: 'm' }));
  });

  it('readConfigFile returns plain objects for TOML', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-toml-'));
    writeFileSync(join(dir, 'c.toml'), '[env.user]\nmodel = "m"\n');
    const config = readConfigFile(join(dir, 'c.toml'));
    expect(Object.getPrototypeOf((config.env as Record<string, unknown>).user)).toBe(Object.prototype);
  });
});

describe('every example config', () => {
  it.each(examples)('%s resolves identically as TOML and as JSON', async (file) => {
    const tomlPath = join(root, 'examples', file);
    const dir = mkdtempSync(join(tmpdir(), 'troupe-example-json-'));
    const jsonPath = join(dir, file.replace(/\.toml$/, '.json'));
    writeFileSync(jsonPath, JSON.stringify(parseToml(await import('node:fs').then((fs) => fs.readFileSync(tomlPath, 'utf8')))));
    const [fromToml, fromJson] = await Promise.all([validate(tomlPath), validate(jsonPath)]);
    expect(fromToml.stderr).toBe('');
    expect(fromToml.code).toBe(0);
    expect(fromJson.code).toBe(0);
    expect(JSON.parse(fromToml.stdout)).toEqual(JSON.parse(fromJson.stdout));
  });

  it('keeps the simulated user of user-sim.toml frozen and chat-only', async () => {
    const { stdout, code } = await validate(join(root, 'examples/user-sim.toml'));
    expect(code).toBe(0);
    const roles = JSON.parse(stdout).roles;
    expect(roles.user).toEqual({
      model: 'Qwen/Qwen3-4B-Instruct-2507',
      harness: 'null',
      runtime: 'local',
      maxTurns: 8,
      trainable: false,
    });
    expect(roles.assistant.trainable).toBe(true);
  });

  it('keeps the judges of the judge examples frozen', async () => {
    for (const file of ['agentic-judge.toml', 'shared-agentic-judge.toml']) {
      const { stdout, code } = await validate(join(root, 'examples', file));
      expect(code).toBe(0);
      expect(JSON.parse(stdout).roles.judge.trainable).toBe(false);
    }
  });
});

describe("every example's roles keep their env defaults for the fields its tables leave out", () => {
  const fields = ['model', 'harness', 'runtime', 'maxTurns', 'trainable'] as const;
  it.each(examples)('%s', async (file) => {
    const source = readFileSync(join(root, 'examples', file), 'utf8');
    const config = parseToml(source) as { env: Record<string, unknown> };
    const resolved = await validate(join(root, 'examples', file));
    expect(resolved.code).toBe(0);
    const roles = JSON.parse(resolved.stdout).roles as Record<string, Record<string, unknown>>;
    const dir = mkdtempSync(join(tmpdir(), 'troupe-example-defaults-'));
    for (const [role, settings] of Object.entries(roles)) {
      const table = config.env[role] as Record<string, unknown> | undefined;
      if (!table) continue;
      // The same config without this role's table: what the env's defaults resolve to.
      const { [role]: _dropped, ...envWithout } = config.env;
      const path = join(dir, `${role}.json`);
      writeFileSync(path, JSON.stringify({ ...config, env: envWithout }));
      const bare = await validate(path);
      expect(bare.code, bare.stderr).toBe(0);
      const defaults = JSON.parse(bare.stdout).roles[role] as Record<string, unknown>;
      for (const field of fields) {
        // The file spells the field snake_case (max_turns), the resolved config camelCase.
        if (field in table || field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) in table) continue;
        expect({ role, field, value: settings[field] }).toEqual({ role, field, value: defaults[field] });
      }
    }
  });
});
