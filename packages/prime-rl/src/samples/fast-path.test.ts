// The hot path (algorithms' scoreGroup, BatchBuilder.addEpisodes filtering as it builds, samples
// sharing node arrays) against a plain reference written from the documented rules, on random
// groups: the same advantages, the same batches, the same samples, and the traces left untouched.

import { Episode, Trace } from '@troupe/verifiers';
import { seededRandom } from '@troupe/verifiers/random';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAlgorithm } from '../algorithms/registry.ts';
import { BatchBuilder, type BatchBuilderConfig, type TrainingBatch } from './batch-builder.ts';
import type { TrainingSample } from './training-sample.ts';
import { filterZeroAdvantages } from './zero-advantage-filter.ts';

/** The core's seeded PRNG, so every run draws the same values. */
const random = seededRandom;

/** A random group: 1–5 episodes of 1–4 traces (proposer/solver), 1–3 nodes each, ties likely. */
function randomGroup(seed: number, group: number): Episode[] {
  const next = random(seed * 7919 + group);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const task = { key: 'k', hash: 'h', data: {} };
  const episodes: Episode[] = [];
  const numEpisodes = 1 + Math.floor(next() * 5);
  for (let e = 0; e < numEpisodes; e++) {
    const episode = new Episode({
      id: `e${group}.${e}`,
      env: { id: pick(['a', 'b']) },
      task,
      group: { id: `g${group}`, index: e },
    });
    const numTraces = 1 + Math.floor(next() * 4);
    for (let t = 0; t < numTraces; t++) {
      const trace = new Trace({
        id: `t${group}.${e}.${t}`,
        task,
        agent: { name: t === 0 ? 'proposer' : 'solver', trainable: next() < 0.85 },
      });
      const numNodes = next() < 0.6 ? 1 : 2 + Math.floor(next() * 2);
      const tokenNodes: number[] = []; // a tokenParent is a node with tokens
      for (let n = 0; n < numNodes; n++) {
        const length = (numNodes === 1 ? 1 : 0) + Math.floor(next() * 4);
        const withTokens = numNodes === 1 || next() < 0.9;
        const mask = Array.from({ length }, () => next() < 0.6);
        const sampled = mask.filter(Boolean).length;
        trace.nodes.push({
          id: n,
          parent: n === 0 ? null : n - 1,
          message: { role: 'assistant', content: 'x' },
          sampled: true,
          timestamp: 0,
          ...(withTokens
            ? {
                tokenIds: Array.from({ length }, () => Math.floor(next() * 100)),
                mask,
                logprobs: Array.from({ length: sampled }, () => -Math.round(next() * 8) / 4),
                tokenParent: tokenNodes.length === 0 || next() < 0.3 ? null : pick(tokenNodes),
              }
            : {}),
        });
      }
      trace.rewards.score = { score: pick([0, 0.5, 1, 1]), weight: 1 };
      if (next() < 0.08) trace.ok = false;
      episode.traces.push(trace);
    }
    episodes.push(episode);
  }
  return episodes;
}

// ---- reference -------------------------------------------------------------------------------

const sampledCount = (trace: Trace) => trace.nodes.reduce((n, node) => n + (node.mask?.filter(Boolean).length ?? 0), 0);
const trainable = (trace: Trace) => trace.ok && trace.agent.trainable && sampledCount(trace) > 0;
const reward = (trace: Trace) => trace.reward;

/** Centred advantages of a peer set: r − mean, 0 for ties and singletons. */
function centred(traces: Trace[], out: Map<Trace, number>): void {
  const rewards = traces.map(reward);
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const tie = rewards.every((r) => r === rewards[0]);
  for (let i = 0; i < traces.length; i++) out.set(traces[i]!, tie ? 0 : rewards[i]! - mean);
}

function referenceAdvantages(type: string, groups: Episode[][]): Map<Trace, number> {
  const out = new Map<Trace, number>();
  const baselines = new Map<string, number>();
  for (const episodes of groups) {
    const traces = episodes.flatMap((episode) => episode.traces.filter(trainable));
    if (type === 'grpo') centred(traces, out);
    if (type === 'max-rl') {
      const rewards = traces.map(reward);
      const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      const tie = rewards.every((r) => r === rewards[0]) || !(mean > 0);
      for (let i = 0; i < traces.length; i++) out.set(traces[i]!, tie ? 0 : (rewards[i]! - mean) / mean);
    }
    if (type === 'hierarchical-grpo') {
      for (const episode of episodes)
        centred(
          episode.traces.filter((t) => trainable(t) && t.agent.name === 'solver'),
          out,
        );
      centred(
        traces.filter((t) => t.agent.name !== 'solver'),
        out,
      );
    }
    if (type === 'rae') {
      for (const episode of episodes) {
        for (const trace of episode.traces.filter(trainable)) {
          const key = `${episode.env.id}/${trace.agent.name}`;
          const before = baselines.get(key) ?? 0;
          out.set(trace, reward(trace) - before);
          baselines.set(key, 0.95 * before + 0.05 * reward(trace));
        }
      }
    }
  }
  return out;
}

/** The samples of a scored trace, per the rules of traceToSamples, every array a fresh copy. */
function referenceSamples(trace: Trace, env: string, episodeId: string): TrainingSample[] {
  if (!trainable(trace)) return [];
  const nodes = trace.nodes;
  const continued = new Set<number>();
  for (const node of nodes) if (node.tokenIds && node.tokenParent != null) continued.add(node.tokenParent);
  const trained = new Set<number>();
  const samples: TrainingSample[] = [];
  for (const leaf of nodes) {
    if (!leaf.tokenIds || continued.has(leaf.id)) continue;
    const chain = [];
    for (let node: (typeof nodes)[number] | undefined = leaf; node; ) {
      chain.unshift(node);
      node = node.tokenParent == null ? undefined : nodes[node.tokenParent];
    }
    const sample: TrainingSample = {
      tokenIds: [],
      mask: [],
      logprobs: [],
      advantages: [],
      env,
      role: trace.agent.name,
      traceId: trace.id,
      episodeId,
      branch: samples.length,
    };
    for (const node of chain) {
      let k = 0;
      for (let t = 0; t < node.tokenIds!.length; t++) {
        const id = node.tokenIds![t]!;
        const sampled = node.mask?.[t] === true;
        const trains = sampled && !trained.has(node.id);
        sample.tokenIds.push(id);
        sample.mask.push(trains);
        sample.logprobs.push(trains ? (node.logprobs?.[k] ?? 0) : 0);
        sample.advantages.push(trains ? (node.advantages ? node.advantages[k]! : node.advantage!) : 0);
        if (sampled) k++;
      }
      trained.add(node.id);
    }
    samples.push(sample);
  }
  return samples;
}

/** Batches as documented: cut by traces or tokens, a trace never split, the filter applied at the cut. */
function referenceBatches(groups: Episode[][], config: BatchBuilderConfig): TrainingBatch[] {
  const batches: TrainingBatch[] = [];
  let open: TrainingSample[] = [];
  let traces = 0;
  let tokens = 0;
  const cut = () => {
    const copy = open.map((s) => ({ ...s, mask: [...s.mask] }));
    const filtered = config.filterZeroAdvantages === false ? null : filterZeroAdvantages(copy);
    batches.push({
      samples: filtered?.samples ?? copy,
      numTraces: traces,
      numTokens: tokens,
      droppedSamples: filtered?.droppedSamples ?? 0,
      maskedTokens: filtered?.maskedTokens ?? 0,
    });
    open = [];
    traces = 0;
    tokens = 0;
  };
  for (const episodes of groups) {
    for (const episode of episodes) {
      for (const trace of episode.traces) {
        const samples = referenceSamples(trace, episode.env.id, episode.id);
        if (samples.length === 0) continue;
        const n = samples.reduce((sum, s) => sum + s.tokenIds.length, 0);
        if (config.tokenBatchSize !== undefined && traces > 0 && tokens + n > config.tokenBatchSize) cut();
        open.push(...samples);
        traces++;
        tokens += n;
        if (config.batchSize !== undefined ? traces >= config.batchSize : tokens >= config.tokenBatchSize!) cut();
      }
    }
  }
  if (traces > 0) cut();
  return batches;
}

// ---- properties ------------------------------------------------------------------------------

const ALGORITHMS = [
  { type: 'grpo' },
  { type: 'max-rl' },
  { type: 'rae' },
  { type: 'hierarchical-grpo', episodeAgents: ['solver'] },
] as const;

const plain = (batch: TrainingBatch) => ({ ...batch, samples: batch.samples.map((s) => ({ ...s })) });

describe('hot path against the reference', () => {
  it('scores, samples and batches random groups exactly as the reference, leaving the traces untouched', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom<BatchBuilderConfig>(
          { batchSize: 1 },
          { batchSize: 5 },
          { batchSize: 3, filterZeroAdvantages: false },
          { tokenBatchSize: 6 },
          { tokenBatchSize: 4, filterZeroAdvantages: false },
        ),
        (seed, numGroups, config, batchConfig) => {
          const groups = Array.from({ length: numGroups }, (_, g) => randomGroup(seed, g));
          const algorithm = createAlgorithm(config);
          const builder = new BatchBuilder(batchConfig);
          const batches: TrainingBatch[] = [];
          const nodesBefore: string[] = [];
          for (const episodes of groups) {
            algorithm.scoreGroup(episodes);
            nodesBefore.push(JSON.stringify(episodes.map((e) => e.traces.map((t) => t.nodes))));
            batches.push(...builder.addEpisodes(episodes));
          }
          const last = builder.flush();
          if (last) batches.push(last);

          const expected = referenceAdvantages(config.type, groups);
          for (const trace of groups.flat().flatMap((e) => e.traces)) {
            const advantage = expected.get(trace);
            for (const node of trace.nodes) {
              const count = node.mask?.filter(Boolean).length ?? 0;
              expect(node.advantages).toBeUndefined(); // a built-in algorithm writes one value per node
              if (advantage === undefined || count === 0) {
                expect(node.advantage).toBeUndefined();
                continue;
              }
              expect(Math.abs(node.advantage! - advantage)).toBeLessThanOrEqual(1e-12);
            }
          }

          expect(batches.map(plain)).toEqual(referenceBatches(groups, batchConfig).map(plain));
          // Samples may share the nodes' arrays: building them, and filtering them again, never writes into a trace.
          for (const batch of batches) filterZeroAdvantages(batch.samples);
          for (let g = 0; g < groups.length; g++) {
            expect(JSON.stringify(groups[g]!.map((e) => e.traces.map((t) => t.nodes)))).toBe(nodesBefore[g]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('builds no sample for a group of ties, counting the drops and cleared bits the filter at the cut counts', () => {
    const episodes = randomGroup(3, 0);
    for (const trace of episodes.flatMap((e) => e.traces)) trace.rewards.score = { score: 1, weight: 1 };
    createAlgorithm({ type: 'grpo' }).scoreGroup(episodes);
    const builder = new BatchBuilder({ batchSize: 1000 });
    expect(builder.addEpisodes(episodes)).toEqual([]);
    const batch = builder.flush()!;
    expect(batch.samples).toEqual([]);
    expect(batch.droppedSamples).toBeGreaterThan(0);
    expect(plain(batch)).toEqual(plain(referenceBatches([episodes], { batchSize: 1000 })[0]!));
  });
});
