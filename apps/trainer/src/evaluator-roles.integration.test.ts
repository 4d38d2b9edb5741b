import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { troupeCli, twoSeatToml } from './__fixtures__/trainer-cli.ts';

const env = resolve(import.meta.dirname, '__fixtures__/two-sides-probed-env.ts');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A run of the probed two-sides env, seat `left` on `leftPolicy` and `right` on `rightPolicy`. */
function config(leftPolicy: string, rightPolicy: string): string {
  const named = [...new Set([leftPolicy, rightPolicy])].filter((n) => n !== 'main');
  return twoSeatToml({
    env,
    left: leftPolicy,
    right: rightPolicy,
    checkpointEvery: 0,
    rest: `[policy]
d_model = 8
heads = 2
${named.map((n) => `[policies.${n}]\nd_model = 8\nheads = 2\n`).join('')}`,
  });
}

async function evalRows(leftPolicy: string, rightPolicy: string) {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-eval-roles-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'run.toml'), config(leftPolicy, rightPolicy));
  const out = join(dir, 'run');
  const result = await troupeCli(['train', '--config', join(dir, 'run.toml'), '--run-dir', out]);
  expect(result.code, result.stderr).toBe(0);
  return readFileSync(join(out, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
    .map((m) => ({ left: m['eval/two-sides/left/own_side'] as number, right: m['eval/two-sides/right/own_side'] as number }));
}

describe('an evaluator reads each role from the policy bound to it', () => {
  it('gets one policy per seat when the seats play two policies, and the shared one for both when they share', async () => {
    // Two policies: the evaluator reads each seat from its own, and both learn their own side.
    const two = await evalRows('west', 'east');
    expect(two).toHaveLength(6);
    const last = two.at(-1) as { left: number; right: number };
    expect(last.left).toBeGreaterThan(0.8);
    expect(last.right).toBeGreaterThan(0.8);
    // One shared policy: both seats are read from it, on the same prompt, so P(left) + P(right) = 1.
    for (const row of await evalRows('main', 'main')) expect(row.left + row.right).toBeCloseTo(1, 6);
  });
});
