import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadCheckpoint } from '@troupe/prime-rl/trainer';
import { describe, expect, it } from 'vitest';
import { tempDirs } from './__fixtures__/temp-dirs.ts';
import { tinyConfig } from './__fixtures__/tiny-runs.ts';
import { readMetrics, train } from './run.ts';
import { applySet, parseRunConfig, readRunConfigFile } from './run-config.ts';

const POOL_CONFIG = join(import.meta.dirname, '..', 'configs', 'kuhn-pool.toml');
const tempDir = tempDirs('troupe-pool-');

/** configs/kuhn-pool.toml at a small size: 4 groups × 2 hands per step, a snapshot every step, 2 kept. */
function tinyPool(overrides: string[] = []): Promise<Record<string, unknown>> {
  return tinyConfig(POOL_CONFIG, [
    'max_steps=4',
    'groups_per_step=4',
    'checkpoint_every=0',
    'train.source.0.group_size=2',
    'train.source.1.group_size=2',
    'train.source.0.roles.player1.pool={"of":"main","keep":2,"every":1,"sample":"uniform"}',
    'train.source.1.roles.player0.pool={"of":"main","keep":2,"every":1,"sample":"recent"}',
    ...overrides,
  ]);
}

/** A metrics line without what depends on the clock (timings, GFLOP/s). */
const withoutTimes = (lines: Record<string, unknown>[]) =>
  lines.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('time/') && k !== 'trainer/gflops')));

describe('opponent pool binding (run config)', () => {
  it('validates pool = { of, keep, every, sample } and names the field path of each problem', async () => {
    const parsed = parseRunConfig(await readRunConfigFile(POOL_CONFIG));
    expect(parsed.train.source[0]?.roles.player1?.pool).toEqual({ of: 'main', keep: 8, every: 25, sample: 'recent' });
    const cases: [string, RegExp][] = [
      [
        'train.source.0.roles.player1.pool={"of":"other"}',
        /train\.source\[0\]\.roles\.player1\.pool\.of: no policy other \(policies: main; add \[policies\.other\]\)/,
      ],
      ['train.source.0.roles.player1.pool={"of":"main","keep":0}', /train\.source\[0\]\.roles\.player1\.pool\.keep/],
      ['train.source.1.roles.player0.pool={"of":"main","every":2.5}', /train\.source\[1\]\.roles\.player0\.pool\.every/],
      ['train.source.0.roles.player1.pool={"of":"main","sample":"latest"}', /train\.source\[0\]\.roles\.player1\.pool\.sample/],
      ['train.source.0.roles.player1.pool={"of":"main","size":3}', /train\.source\[0\]\.roles\.player1\.pool: .*size/],
      [
        'train.source.0.roles.player1.policy=main',
        /train\.source\[0\]\.roles\.player1: give one of policy, model, checkpoint or pool/,
      ],
    ];
    for (const [set, message] of cases) {
      const config = await readRunConfigFile(POOL_CONFIG);
      applySet(config, set);
      expect(() => parseRunConfig(config), set).toThrow(message);
    }
  });

  it('refuses a pool on an eval source, naming it', async () => {
    const config = await tinyPool([
      'eval={"interval":2,"groups":1,"source":[{"env":"kuhn-poker","options":{"prompts":"pass-bet"},"roles":{"player1":{"pool":{"of":"main"}}}}]}',
    ]);
    await expect(train({ config, out: await tempDir() })).rejects.toThrow(
      /eval\.source\[0\]\.roles\.player1\.pool: an eval source/,
    );
  });
});

describe('training against an opponent pool (configs/kuhn-pool.toml, small)', () => {
  it('plays the pool seat from drawn snapshots and never sends its traces to the trainer', async () => {
    const out = await tempDir();
    const result = await train({ config: await tinyPool(), out });
    expect(result.episodes).toBe(4 * 4 * 2);
    const metrics = await readMetrics(out);
    const ages: number[] = [];
    for (const m of metrics) {
      // Each source: 2 groups × 2 hands; the main seat's 4 traces train, the pool seat's 4 never do.
      expect(m['train/seat0-vs-pool/player1/traces']).toBe(4);
      expect(m['train/seat0-vs-pool/player1/trainableTraces']).toBe(0);
      expect(m['train/seat0-vs-pool/player1/is_trainable/mean']).toBe(0);
      expect(m['train/seat1-vs-pool/player0/trainableTraces']).toBe(0);
      expect(m['train/seat0-vs-pool/player0/is_trainable/mean']).toBe(1);
      expect(m['train/seat1-vs-pool/player1/is_trainable/mean']).toBe(1);
      // 8 of the step's 16 traces reached the batch: the main seats'.
      expect(m['batch/traces']).toBe(8);
      ages.push(
        Number(m['pool/seat0-vs-pool/player1/snapshot_age/mean']),
        Number(m['pool/seat1-vs-pool/player0/snapshot_age/mean']),
      );
    }
    // maxAsync 1: steps 1–2 play version 0 (the pool holds the initial weights only), then two snapshots.
    expect(metrics.map((m) => m['pool/seat0-vs-pool/player1/size'])).toEqual([1, 1, 2, 2]);
    // One snapshot is drawn per hand: some steps mix the older and the newer one (mean age strictly between 0 and 1).
    expect(ages.some((a) => a > 0 && a < 1)).toBe(true);
    expect(ages.every((a) => a >= 0 && a <= 1)).toBe(true);
  });

  it('keeps the snapshots in the checkpoint and a run killed after it continues identically on resume', async () => {
    const config = () => tinyPool(['max_steps=6', 'checkpoint_every=4', 'keep_checkpoints=[2]']);
    const full = await tempDir();
    await train({ config: await config(), out: full });
    // The same run, stopped by an error after step 5 was played (its last checkpoint is step 4's).
    const cut = await tempDir();
    await expect(
      train({
        config: await config(),
        out: cut,
        onStep: (m) => {
          if (m.step === 5) throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    // At step 4 the pool holds steps 2, 3, 4 (keep 2 for the rollout at version 3, and the new one);
    // step 2 is held only by the pool, and its tensors are the policy of step 2.
    const checkpoint = await loadCheckpoint({ dir: join(cut, 'checkpoint') });
    expect(checkpoint.step).toBe(4);
    const pools = (checkpoint.state.orchestrator as { pools: Record<string, Record<string, number[]>> }).pools;
    expect(pools).toEqual({ 'seat0-vs-pool': { player1: [2, 3, 4] }, 'seat1-vs-pool': { player0: [2, 3, 4] } });
    const stepTwo = await loadCheckpoint({ dir: join(cut, 'checkpoint-step-2') });
    const held = checkpoint.inference?.find((v) => v.version === 2)?.weights;
    expect(held?.map((w) => [...w.data])).toEqual(stepTwo.weights.map((w) => [...w.data]));

    // Resume from step 4: the rollouts at versions 3 and 4 draw from the restored snapshots.
    await train({ config: await config(), out: cut, resume: true });
    const a = withoutTimes(await readMetrics(full));
    const b = withoutTimes(await readMetrics(cut));
    expect(b.map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b).toEqual(a);
    expect(JSON.parse(await readFile(join(cut, 'policy-table.json'), 'utf8'))).toEqual(
      JSON.parse(await readFile(join(full, 'policy-table.json'), 'utf8')),
    );
  });
});
