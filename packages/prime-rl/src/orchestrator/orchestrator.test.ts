import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Env, type Taskset } from '@troupe/verifiers';
import { sayWordEnv } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlgorithm } from '../algorithms/registry.ts';
import { initWeights } from '../policy/config.ts';
import { embeddedInference, embeddedPolicy, embeddedTrainer } from './embedded.ts';
import { ModelRouter } from './model-router.ts';
import { allocateGroups, Orchestrator, type OrchestratorOptions } from './orchestrator.ts';
import type { Trainer, TrainSource } from './types.ts';

/** One seat told a word earns 1 for replying it. */
const echoEnv = sayWordEnv({ id: 'echo', words: ['up', 'down'], speaker: { harness: 'null' } });

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function setup(
  options: { maxAsync: number; maxOffPolicySteps: number; maxSteps: number } & Partial<
    Pick<OrchestratorOptions, 'maxSeconds' | 'checkpointEvery'>
  >,
) {
  const out = await mkdtemp(join(tmpdir(), 'troupe-orchestrator-'));
  dirs.push(out);
  let client: Env['baseAgents'][string]['client'] | null = null;
  const router = new ModelRouter({ main: () => client as never });
  const env = await Env.create({
    definition: echoEnv,
    config: { id: 'echo' },
    run: { model: 'main', client: router, sampling: { maxTokens: 1 } },
  });
  const taskset = (await echoEnv.taskset?.({} as never)) as Taskset;
  const { tokenizer, policy } = embeddedPolicy({
    sources: [{ options: {}, taskset }],
    dModel: 8,
    layers: 1,
    heads: 2,
    ffnMult: 1,
    seed: 1,
    maxTokens: 1,
  });
  const weights = initWeights(policy);
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
  const inference = await embeddedInference({ tokenizer, policy, weights, version: 0, seed: 5, maxTokens: 1 });
  client = inference.client as never;
  const source: TrainSource = {
    name: 'echo',
    env: env as unknown as Env,
    taskset,
    algorithm: createAlgorithm({ type: 'grpo' }),
    groupSize: 4,
    ratio: 1,
    frozenRoles: new Set(),
  };
  const orchestrator = new Orchestrator({
    sources: [source],
    trainer,
    inference,
    groupsPerStep: 2,
    checkpointEvery: 0,
    out,
    ...options,
  });
  return { orchestrator, out, trained, close: () => embedded.close() };
}

const lines = async (out: string) =>
  (await readFile(join(out, 'metrics.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, number>);

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
      const versions = (await lines(run.out)).map((m) => m.policy_version);
      expect(versions).toEqual(maxAsync === 0 ? [0, 1, 2, 3] : [0, 0, 1, 2]);
    }
  });

  it('drops a group more than maxOffPolicySteps behind, whole, before it reaches the trainer', async () => {
    const run = await setup({ maxAsync: 1, maxOffPolicySteps: 0, maxSteps: 3 });
    await run.orchestrator.run();
    await run.close();
    const metrics = await lines(run.out);
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
    expect((await lines(run.out)).map((m) => m.step)).toEqual([1]);
    const saved = JSON.parse(await readFile(join(run.out, 'checkpoint', 'meta.json'), 'utf8')) as { step: number };
    expect(saved.step).toBe(1);
  });
});
