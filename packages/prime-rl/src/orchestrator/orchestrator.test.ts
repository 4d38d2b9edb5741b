import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { echoRun, readMetrics, removeEchoRuns } from './__fixtures__/echo-run.ts';
import { embeddedTrainer } from './embedded.ts';
import { allocateGroups, Orchestrator, type OrchestratorOptions } from './orchestrator.ts';
import type { Trainer } from './types.ts';

afterAll(removeEchoRuns);

async function setup(
  options: { maxAsync: number; maxOffPolicySteps: number; maxSteps: number } & Partial<
    Pick<OrchestratorOptions, 'maxSeconds' | 'checkpointEvery'>
  >,
) {
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
  const orchestrator = new Orchestrator({
    sources: [source()],
    trainer,
    inference,
    groupsPerStep: 2,
    checkpointEvery: 0,
    out,
    ...options,
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
      const run = await setup({ maxAsync, maxOffPolicySteps: 8, maxSteps: 4 });
      await run.orchestrator.run();
      await run.close();
      const versions = (await readMetrics(run.out)).map((m) => m.policy_version);
      expect(versions).toEqual(maxAsync === 0 ? [0, 1, 2, 3] : [0, 0, 1, 2]);
    }
  });

  it('drops a group more than maxOffPolicySteps behind, whole, before it reaches the trainer', async () => {
    const run = await setup({ maxAsync: 1, maxOffPolicySteps: 0, maxSteps: 3 });
    await run.orchestrator.run();
    await run.close();
    const metrics = await readMetrics(run.out);
    expect(metrics.map((m) => m['off_policy/dropped'])).toEqual([0, 2, 2]);
    expect(metrics.slice(1).map((m) => m['batch/samples'])).toEqual([0, 0]);
    // Only step 1's batch (on time) can reach the trainer; dropped groups never do.
    expect(run.trained.length).toBe((metrics[0]?.['batch/samples'] ?? 0) > 0 ? 1 : 0);
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
});
