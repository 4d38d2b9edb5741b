import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode } from '../testing/node-process.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');
const troupe = (args: string[]) =>
  runNode(['--import', 'tsx', cli, ...args], { cwd: root, env: { ...process.env, OPENAI_API_KEY: 'x' } });

describe('troupe validate --only-noop', () => {
  it('prints one JSON line per task scored with no agent action, exits 0 when none scores >= 1, and is refused by eval', async () => {
    const [validated, refused] = await Promise.all([
      troupe(['validate', '--only-noop', '-n', '2', '-m', 'unused-model']),
      troupe(['eval', '--only-noop', '-n', '2', '-m', 'unused-model']),
    ]);
    expect(validated.code, validated.stderr).toBe(0);
    const lines = validated.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ role: 'agent', index: 0, reward: 0, solvedByNothing: false });
    expect(validated.stderr).toMatch(/0 of 2 task\(s\) score >= 1 with no agent action/);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--only-noop is a troupe validate flag/);
  });
});
