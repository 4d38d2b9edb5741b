import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode } from '../testing/node-process.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');
const troupe = (args: string[]) =>
  runNode(['--import', 'tsx', cli, ...args], { cwd: root, env: { ...process.env, OPENAI_API_KEY: 'x' } });

describe('troupe validate --only-noop / --only-gold', () => {
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

  it('--only-gold scores each task with its gold reply (the arithmetic answers score 1)', async () => {
    const gold = await troupe(['validate', '--only-gold', '-n', '2', '-m', 'unused-model']);
    expect(gold.code, gold.stderr).toBe(0);
    const lines = gold.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.reward, line.goldFails, line.goldMissing])).toEqual([
      [1, false, false],
      [1, false, false],
    ]);
    expect(gold.stderr).toMatch(/0 of 2 gold repl\(ies\) score below 1; 0 task\(s\) without gold/);
  });
});
