import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Env, type Taskset } from '@troupe/verifiers';
import { sayWordEnv } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlgorithm } from '../algorithms/registry.ts';
import { initWeights } from '../policy/config.ts';
import { embeddedInference, embeddedPolicy } from './embedded.ts';
import { ModelRouter } from './model-router.ts';
import { Orchestrator, type OrchestratorCheckpoint } from './orchestrator.ts';
import type { Evaluator, Inference, Trainer, TrainSource, WeightsHandle } from './types.ts';

// The orchestrator over weights it cannot read (prime-rl's trainer + vLLM): it holds handles,
// hands them to the inference engine in order, checkpoints its own state with the handle, and
// skips an evaluator that needs reply probabilities the engine cannot give.
const echoEnv = sayWordEnv({ id: 'echo', words: ['up', 'down'], speaker: { harness: 'null' } });

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('Orchestrator over opaque weights', () => {
  it('hands each handle to the engine, checkpoints the handle, skips an evaluator that needs reply probabilities', async () => {
    const out = await mkdtemp(join(tmpdir(), 'troupe-opaque-'));
    dirs.push(out);
    let client: Env['baseAgents'][string]['client'] | null = null;
    const env = await Env.create({
      definition: echoEnv,
      config: { id: 'echo' },
      run: { model: 'main', client: new ModelRouter({ main: () => client as never }), sampling: { maxTokens: 1 } },
    });
    const taskset = (await echoEnv.taskset?.({} as never)) as Taskset;
    // Sampling (token ids, logprobs) from a real policy; its weights never pass through the orchestrator.
    const { tokenizer, policy } = embeddedPolicy({
      sources: [{ options: {}, taskset }],
      dModel: 8,
      layers: 1,
      heads: 2,
      ffnMult: 1,
      seed: 1,
      maxTokens: 1,
    });
    const sampler = await embeddedInference({
      tokenizer,
      policy,
      weights: initWeights(policy),
      version: 0,
      seed: 5,
      maxTokens: 1,
    });
    client = sampler.client as never;
    const handle = (step: number): WeightsHandle => ({ step, dir: `/nowhere/broadcasts/step_${step}` });
    let latest = handle(0);
    const trained: number[] = [];
    const trainer: Trainer<WeightsHandle, null> = {
      description: 'opaque',
      async step({ samples, step }) {
        trained.push(samples.length);
        latest = handle(step);
        return { weights: latest, metrics: {} };
      },
      state: async () => ({ weights: latest, optimizer: null }),
      close: async () => {},
    };
    const pushed: { version: number; step: number }[] = [];
    let version = 0;
    const inference: Inference<WeightsHandle> = {
      client: sampler.client,
      get version() {
        return version;
      },
      async updateWeights({ weights, version: next }) {
        pushed.push({ version: next, step: weights.step });
        version = next;
      },
      evaluationPolicy: async () => ({ version, client: sampler.client }),
      rngState: () => null,
      loadRngState() {},
    };
    let probed = 0;
    const needsProbabilities: Evaluator = {
      async evaluate({ policy }) {
        probed++;
        const p = await (policy.replyProbabilities?.({ messages: [], replies: ['up'] }) ?? Promise.resolve([1]));
        return { metrics: { p: p[0] ?? 0 } };
      },
    };
    const source = (name: string, evaluator: Evaluator): TrainSource => ({
      name,
      env: env as unknown as Env,
      taskset,
      algorithm: createAlgorithm({ type: 'grpo' }),
      groupSize: 4,
      ratio: 1,
      frozenRoles: new Set(),
      evaluator,
    });
    const plain: Evaluator = { evaluate: async ({ policy }) => ({ metrics: { version: policy.version } }) };
    const checkpoints: OrchestratorCheckpoint<WeightsHandle, null>[] = [];
    const log: string[] = [];
    const result = await new Orchestrator({
      sources: [source('probing', needsProbabilities), source('plain', plain)],
      trainer,
      inference,
      maxSteps: 3,
      maxAsync: 0,
      groupsPerStep: 4,
      checkpointEvery: 3,
      out,
      writeCheckpoint: async ({ dir: _dir, ...checkpoint }) => void checkpoints.push(checkpoint),
      log: (line) => log.push(line),
    }).run();
    expect(result.steps).toBe(3);
    const metrics = (await readFile(join(out, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    // Each version's handle: its own step's, or the step before's when its batch was empty (every advantage 0).
    expect(pushed.map((p) => p.version)).toEqual([1, 2]);
    const empty = metrics.map((m) => m['batch/samples'] === 0);
    expect(pushed.map((p) => p.step)).toEqual([1, 2].map((v) => (empty[v - 1] ? (empty[v - 2] ? v - 2 : v - 1) : v)));
    expect(trained).toHaveLength(empty.filter((e) => !e).length);
    expect(metrics.map((m) => m.policy_version)).toEqual([0, 1, 2]);
    // The evaluator that reads probabilities was tried once, then skipped with a note; the other ran each step.
    expect(probed).toBe(1);
    expect(log.filter((l) => /eval\/probing: evaluator skipped .*reply probabilities/.test(l))).toHaveLength(1);
    expect(metrics.map((m) => m['eval/probing/p'])).toEqual([undefined, undefined, undefined]);
    expect(metrics.map((m) => m['eval/plain/version'])).toEqual([0, 1, 2]);
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ step: 3, weights: handle(3), optimizer: null, inference: [] });
    expect(
      Object.keys(
        ((checkpoints[0] as OrchestratorCheckpoint<WeightsHandle, null>).state.orchestrator as { cursors: object }).cursors,
      ),
    ).toEqual(['probing', 'plain']);
  });
});
