import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { echoRun, readMetrics, removeEchoRuns } from './__fixtures__/echo-run.ts';
import { embeddedTrainer } from './embedded.ts';
import { allocateGroups, Orchestrator, type OrchestratorOptions, TrainingStoppedError } from './orchestrator.ts';
import type { Trainer, TrainSource } from './types.ts';

afterAll(removeEchoRuns);

async function setup(
  options: { maxAsync: number; maxOffPolicySteps: number; maxSteps: number } & Partial<
    Pick<OrchestratorOptions, 'maxSeconds' | 'checkpointEvery' | 'log' | 'filterZeroAdvantages' | 'stopAfterFailedSteps'>
  > & {
      /** Collections (1-based, in play order, collections again included) whose every episode fails, as with an endpoint down. */
      failCollections?: ReadonlySet<number>;
      /** Wraps the echo env (e.g. to rewrite what its episodes recorded). */
      wrapEnv?: (env: TrainSource['env']) => TrainSource['env'];
    },
) {
  const { failCollections, wrapEnv, ...orchestratorOptions } = options;
  const { out, policy, weights, inference, source } = await echoRun('troupe-orchestrator-');
  const embedded = await embeddedTrainer({
    policy,
    weights,
    trainer: { lr: 1e-2 },
    schedule: {
      maxSteps: options.maxSteps,
      lr: 1e-2,
      lrFinalFraction: 1,
      lrDecayFraction: 1,
      momentumAtFloor: null,
      refKlTauStart: null,
      refKlTau: 0,
      refKlDecayFraction: 1,
    },
    workerThread: false,
  });
  const trained: string[][] = [];
  // The real trainer, recording which roles each batch held.
  const trainer: Trainer = { ...embedded, step: (o) => (trained.push(o.samples.map((s) => s.role)), embedded.step(o)) };
  const echo = source();
  if (failCollections) {
    // Episodes run a group at a time (2 groups of 4 a collection): episode k belongs to collection ⌈k / 8⌉.
    const runEpisode = echo.env.runEpisode.bind(echo.env);
    let played = 0;
    echo.env.runEpisode = async (episodeOptions) => {
      const collection = Math.floor(played++ / 8) + 1;
      const episode = await runEpisode(episodeOptions);
      if (failCollections.has(collection))
        episode.recordError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { name: 'ProviderError' }), 'agent');
      return episode;
    };
  }
  const orchestrator = new Orchestrator({
    sources: [wrapEnv ? { ...echo, env: wrapEnv(echo.env) } : echo],
    trainer,
    inference,
    groupsPerStep: 2,
    checkpointEvery: 0,
    out,
    endpoints: ['http://127.0.0.1:9/v1'],
    ...orchestratorOptions,
  });
  return { orchestrator, out, trained, close: () => embedded.close() };
}

describe('Orchestrator', () => {
  it('splits a step’s groups across sources by ratio (largest remainder)', () => {
    expect(allocateGroups([1, 1], 5)).toEqual([3, 2]);
    expect(allocateGroups([3, 1], 8)).toEqual([6, 2]);
    expect(allocateGroups([1], 7)).toEqual([7]);
  });

  it('plays on-policy with maxAsync 0 and one step behind with maxAsync 1', async () => {
    for (const maxAsync of [0, 1]) {
      // Zero-advantage samples kept: no step is empty, so none is collected again at a newer version.
      const run = await setup({ maxAsync, maxOffPolicySteps: 8, maxSteps: 4, filterZeroAdvantages: false });
      await run.orchestrator.run();
      await run.close();
      const metrics = await readMetrics(run.out);
      expect(metrics.map((m) => m['batch/empty_steps'])).toEqual([0, 0, 0, 0]);
      expect(metrics.map((m) => m.policy_version)).toEqual(maxAsync === 0 ? [0, 1, 2, 3] : [0, 0, 1, 2]);
    }
  });

  it('drops a group more than maxOffPolicySteps behind, whole, and rolls the step again at the newest version', async () => {
    const lines: string[] = [];
    const run = await setup({
      maxAsync: 1,
      maxOffPolicySteps: 0,
      maxSteps: 3,
      filterZeroAdvantages: false,
      log: (line) => lines.push(line),
    });
    await run.orchestrator.run();
    await run.close();
    const metrics = await readMetrics(run.out);
    // Collections 2 and 3 ran one version behind: every group dropped, so each step rolled again at
    // version n − 1 (on time), and that batch trained. No step reached the trainer empty.
    expect(metrics.map((m) => m['batch/empty_steps/off_policy'])).toEqual([0, 1, 1]);
    expect(metrics.map((m) => m.policy_version)).toEqual([0, 1, 2]);
    expect(metrics.map((m) => m['off_policy/dropped'])).toEqual([0, 0, 0]);
    expect(run.trained).toHaveLength(3);
    expect(run.trained.every((roles) => roles.length > 0)).toBe(true);
    expect(
      lines.filter((l) =>
        /^step [23]: empty batch after \d+ episodes \(off-policy\); not sent to the trainer, collecting again \(consecutive empty batches: 1\/10\)$/.test(
          l,
        ),
      ),
    ).toHaveLength(2);
  });

  it('counts the steps a collection waited in the queue: pinned to v0 for step 3, it is 2 behind when consumed and dropped', async () => {
    // maxAsync 2 pins collections 1-3 to version 0; each may start before the trainer has finished a
    // step, but what counts is the step that consumes it: step 3 trains on v2, 2 steps past v0.
    const run = await setup({ maxAsync: 2, maxOffPolicySteps: 1, maxSteps: 3, filterZeroAdvantages: false });
    await run.orchestrator.run();
    await run.close();
    const metrics = await readMetrics(run.out);
    expect(metrics.map((m) => m['batch/stale_episodes_dropped'])).toEqual([0, 0, 8]);
    expect(metrics.map((m) => m['batch/stale_groups_dropped'])).toEqual([0, 0, 2]);
    expect(metrics.map((m) => m['batch/empty_steps/off_policy'])).toEqual([0, 0, 1]);
    expect(metrics.map((m) => m.policy_version)).toEqual([0, 0, 2]);
    expect(run.trained).toHaveLength(3);
  });

  it('drops an episode whose calls an older policy served on its own, and trains the rest of its group', async () => {
    // On-policy, bound 0: every collection plays at the newest version, but the first episode of each
    // group reports its calls served by v0 (as a server still on an old version would), so from
    // step 2 on it alone is stale; GRPO rescores the three others and they train.
    const run = await setup({
      maxAsync: 0,
      maxOffPolicySteps: 0,
      maxSteps: 3,
      filterZeroAdvantages: false,
      wrapEnv: (env) =>
        Object.assign(Object.create(env) as typeof env, {
          runEpisode: async (o: Parameters<typeof env.runEpisode>[0]) => {
            const episode = await env.runEpisode(o);
            if (o.group?.index === 0) for (const t of episode.traces) for (const c of t.calls) c.policyVersion = 0;
            return episode;
          },
        }),
    });
    await run.orchestrator.run();
    await run.close();
    const metrics = await readMetrics(run.out);
    expect(metrics.map((m) => m['batch/stale_episodes_dropped'])).toEqual([0, 2, 2]);
    expect(metrics.map((m) => m['batch/stale_groups_dropped'])).toEqual([0, 0, 0]);
    expect(metrics.map((m) => m['batch/samples'])).toEqual([8, 6, 6]);
  });

  it('stops at the first step boundary after maxSeconds, checkpointed, and reports the steps it trained', async () => {
    const run = await setup({ maxAsync: 1, maxOffPolicySteps: 8, maxSteps: 6, maxSeconds: 1e-6, checkpointEvery: 25 });
    const result = await run.orchestrator.run();
    await run.close();
    expect(result.steps).toBe(1);
    expect((await readMetrics(run.out)).map((m) => m.step)).toEqual([1]);
    const saved = JSON.parse(await readFile(join(run.out, 'checkpoint', 'meta.json'), 'utf8')) as { step: number };
    expect(saved.step).toBe(1);
  });

  it('rolls a step again when every episode of it failed, and stops after stopAfterFailedSteps in a row, naming the error and endpoint, checkpoint kept', async () => {
    const lines: string[] = [];
    // Collections 1-2 train steps 1-2; 3 and 4 fail whole (step 3 rolls again twice), 5 trains step 3;
    // then 7, 8, 9 fail in a row: with stopAfterFailedSteps 3 the run stops at step 5.
    const run = await setup({
      maxAsync: 0,
      maxOffPolicySteps: 8,
      maxSteps: 8,
      filterZeroAdvantages: false,
      checkpointEvery: 1,
      stopAfterFailedSteps: 3,
      failCollections: new Set([3, 4, 7, 8, 9]),
      log: (line) => lines.push(line),
    });
    const error = await run.orchestrator.run().catch((e: unknown) => e);
    await run.close();
    expect(TrainingStoppedError.isInstance(error)).toBe(true);
    const stopped = error as TrainingStoppedError;
    expect([stopped.step, stopped.consecutive]).toEqual([5, 3]);
    expect(stopped.message).toBe(
      'every episode of 3 steps in a row (stop_after_failed_steps; step 5) failed (8 episodes); first error (source echo, stage agent): ProviderError: connect ECONNREFUSED 127.0.0.1:9; endpoints: http://127.0.0.1:9/v1',
    );
    const metrics = await readMetrics(run.out);
    expect(metrics.map((m) => m.step)).toEqual([1, 2, 3, 4]);
    expect(metrics.map((m) => m['batch/empty_steps/failed_episodes'])).toEqual([0, 0, 2, 0]);
    expect(metrics.map((m) => m['batch/empty_steps'])).toEqual([0, 0, 2, 0]);
    // No failed collection reached the trainer; the checkpoint of the last trained step is kept.
    expect(run.trained).toHaveLength(4);
    const saved = JSON.parse(await readFile(join(run.out, 'checkpoint', 'meta.json'), 'utf8')) as { step: number };
    expect(saved.step).toBe(4);
    expect(lines).toContain(
      'step 3: every episode failed (8 episodes); not sent to the trainer, collecting again (failed steps in a row: 2/3)',
    );
  });

  it("stops at the run's first step when every episode of it failed", async () => {
    const run = await setup({ maxAsync: 1, maxOffPolicySteps: 8, maxSteps: 3, failCollections: new Set([1]) });
    const error = (await run.orchestrator.run().catch((e: unknown) => e)) as TrainingStoppedError;
    await run.close();
    expect(error.name).toBe('TrainingStoppedError');
    expect(error.message).toMatch(/^every episode of the run's first step \(step 1\) failed \(8 episodes\); first error/);
    expect(await readMetrics(run.out)).toEqual([]);
    expect(run.trained).toHaveLength(0);
  });
});
