import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Env, type Taskset } from '@troupe/verifiers';
import { sayWordEnv } from '@troupe/verifiers/testing';
import { createAlgorithm } from '../../algorithms/registry.ts';
import { initWeights } from '../../policy/config.ts';
import { embeddedInference, embeddedPolicy } from '../embedded.ts';
import { ModelRouter } from '../model-router.ts';
import type { TrainSource } from '../types.ts';

/** One seat told a word earns 1 for replying it. */
export const echoEnv = sayWordEnv({ id: 'echo', words: ['up', 'down'], speaker: { harness: 'null' } });

const outs: string[] = [];

/** Removes every output folder {@link echoRun} made (a test file's `afterAll`). */
export async function removeEchoRuns(): Promise<void> {
  for (const dir of outs.splice(0)) await rm(dir, { recursive: true, force: true });
}

/**
 * What an orchestrator test over the echo env starts from: a fresh output folder, the env (its
 * agents' model is the sampler), the taskset, a tiny real policy (d_model 8, one layer, one reply
 * token) with its initial weights, and the embedded onnxruntime sampler at version 0 (seed 5).
 */
export async function echoRun(prefix: string) {
  const out = await mkdtemp(join(tmpdir(), prefix));
  outs.push(out);
  let client: Env['baseAgents'][string]['client'] | null = null;
  const env = await Env.create({
    definition: echoEnv,
    config: { id: 'echo' },
    run: { model: 'main', client: new ModelRouter({ main: () => client as never }), sampling: { maxTokens: 1 } },
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
  const inference = await embeddedInference({ tokenizer, policy, weights, version: 0, seed: 5, maxTokens: 1 });
  client = inference.client as never;
  /** A GRPO train source over the echo env, four replies a group; `extra` overrides any field. */
  const source = (extra: Partial<TrainSource> = {}): TrainSource => ({
    name: 'echo',
    env: env as unknown as Env,
    taskset,
    algorithm: createAlgorithm({ type: 'grpo' }),
    groupSize: 4,
    ratio: 1,
    frozenRoles: new Set(),
    ...extra,
  });
  return { out, policy, weights, inference, source };
}

/** The rows of a run's `metrics.jsonl`, in order. */
export async function readMetrics(out: string): Promise<Record<string, number>[]> {
  return (await readFile(join(out, 'metrics.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, number>);
}
