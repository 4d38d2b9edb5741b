import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { legalActionServer, runEpisodes, runNode, type ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `troupe rerun --swap` on a two-seat game: the core's CLI in a child process, with Kuhn poker
 * found as an installed env package (`--env kuhn-poker` resolves `@troupe/env-kuhn-poker` from
 * this package's dependencies).
 */
const require = createRequire(import.meta.url);
const folderOf = (name: string) => dirname(require.resolve(`${name}/package.json`));
const cli = join(folderOf('@troupe/verifiers'), 'src/cli/main.ts');
const tsxLoader = join(folderOf('tsx'), 'dist/loader.mjs');
const here = join(import.meta.dirname, '..');
const troupe = (args: string[]) => runNode(['--import', tsxLoader, cli, ...args], { cwd: here });

describe('troupe rerun --swap (counterfactual seat replay) on Kuhn poker', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    // "passive" plays the first legal action the prompt names, "aggressive" the last.
    server = await legalActionServer({ playsLast: ['aggressive'] });
  });
  afterAll(() => server.close());

  it('re-plays the same deals with one seat swapped and reports the paired change of each role', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-rerun-'));
    const source = join(outputs, 'source');
    const first = await troupe([
      'eval',
      '--env',
      'kuhn-poker',
      '-n',
      '12',
      '--harness',
      'null',
      '-m',
      'passive',
      '-b',
      server.baseUrl,
      '--run-dir',
      source,
    ]);
    expect(first.code, first.stderr).toBe(0);

    const rerun = await troupe(['rerun', source, '--swap', 'player1=aggressive']);
    expect(rerun.stderr).not.toMatch(/Error/);
    expect(rerun.code).toBe(0);
    const rerunDir = `${source}--rerun-player1-aggressive`;
    expect(readdirSync(outputs).sort()).toEqual(['source', 'source--rerun-player1-aggressive']);

    const before = runEpisodes(source);
    const after = runEpisodes(rerunDir);
    // The same tasks (deals) in both runs, and only the swapped seat changed model.
    expect(after.map((e) => e.task.key).sort()).toEqual(before.map((e) => e.task.key).sort());
    for (const episode of after) {
      const models = Object.fromEntries(
        episode.traces.map((t: { agent: { name: string; model: string } }) => [t.agent.name, t.agent.model]),
      );
      expect(models).toEqual({ player0: 'passive', player1: 'aggressive' });
    }

    const report = JSON.parse(readFileSync(join(rerunDir, 'rerun.json'), 'utf8'));
    expect(report.swap).toEqual({ role: 'player1', model: 'aggressive', baseUrl: null });
    const byRole = Object.fromEntries(report.differences.map((d: { role: string }) => [d.role, d]));
    expect(byRole.player0.pairs).toBe(12);
    expect(byRole.player1.pairs).toBe(12);
    // Zero-sum: what one seat gains the other loses, pair by pair, so the means mirror.
    expect(byRole.player0.meanDifference).toBeCloseTo(-byRole.player1.meanDifference, 10);
    // Recomputed from the traces: the mean of the per-deal differences of player1's payoff.
    const payoff = (
      episodes: {
        task: { key: string };
        traces: { agent: { name: string }; rewards: Record<string, { score: number; weight: number } | null> }[];
      }[],
    ) =>
      new Map(
        episodes.map((e) => [
          e.task.key,
          e.traces
            .filter((t) => t.agent.name === 'player1')
            .flatMap((t) => Object.values(t.rewards))
            .reduce((sum, r) => sum + (r ? r.score * r.weight : 0), 0),
        ]),
      );
    const b = payoff(before);
    const a = payoff(after);
    const expected = [...b.keys()].reduce((sum, key) => sum + ((a.get(key) ?? 0) - (b.get(key) ?? 0)), 0) / b.size;
    expect(byRole.player1.meanDifference).toBeCloseTo(expected, 10);
    expect(byRole.player1.meanDifference).not.toBe(0);
    expect(rerun.stdout).toMatch(/player1 +12 /);
    expect(JSON.parse(rerun.stdout.trim().split('\n').at(-1) as string).swap.role).toBe('player1');
  }, 120_000);
});
