import { afterAll, describe, expect, it } from 'vitest';
import { echoRun, readMetrics, removeEchoRuns } from './__fixtures__/echo-run.ts';
import { Orchestrator, type OrchestratorCheckpoint } from './orchestrator.ts';
import type { Evaluator, Inference, Trainer, WeightsHandle } from './types.ts';

// The orchestrator over weights it cannot read (prime-rl's trainer + vLLM): it holds handles,
// hands them to the inference engine in order, checkpoints its own state with the handle, and
// skips an evaluator that needs reply probabilities the engine cannot give.
afterAll(removeEchoRuns);

describe('Orchestrator over opaque weights', () => {
  it('hands each handle to the engine, checkpoints the handle, skips an evaluator that needs reply probabilities', async () => {
    // Sampling (token ids, logprobs) from a real policy; its weights never pass through the orchestrator.
    const { out, inference: sampler, source } = await echoRun('troupe-opaque-');
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
    const plain: Evaluator = { evaluate: async ({ policy }) => ({ metrics: { version: policy.version } }) };
    const checkpoints: OrchestratorCheckpoint<WeightsHandle, null>[] = [];
    const log: string[] = [];
    const result = await new Orchestrator({
      sources: [source({ name: 'probing', evaluator: needsProbabilities }), source({ name: 'plain', evaluator: plain })],
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
    const metrics = await readMetrics(out);
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
    // The handle of the last step that trained: a step whose batch was empty calls no trainer.
    const lastTrained = [3, 2, 1].find((step) => !empty[step - 1]) ?? 0;
    expect(checkpoints[0]).toMatchObject({ step: 3, weights: handle(lastTrained), optimizer: null, inference: [] });
    expect(
      Object.keys(
        ((checkpoints[0] as OrchestratorCheckpoint<WeightsHandle, null>).state.orchestrator as { cursors: object }).cursors,
      ),
    ).toEqual(['probing', 'plain']);
  });
});
