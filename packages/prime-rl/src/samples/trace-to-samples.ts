import { ConfigError, type Episode, type MessageNode, type Trace } from '@troupe/verifiers';
import { sampledAdvantage } from '@troupe/verifiers/internal';
import { isTrainableTrace } from '../algorithms/trainable-traces.ts';
import type { TrainingSample } from './training-sample.ts';

/** Options of {@link traceToSamples}. */
export interface TraceToSamplesOptions {
  trace: Trace;
  /** Env id stamped on the samples. */
  env: string;
  /** Episode id stamped on the samples. */
  episodeId: string;
  /** Array to append to (saves an allocation in hot loops); a new one when absent. */
  into?: TrainingSample[];
}

/**
 * Turns one trace into training samples, one per token branch. A branch is a chain of nodes with
 * token ids linked by `tokenParent`: consecutive turns whose prompt extends the previous
 * prompt+completion merge into one sample; a node with `tokenParent` null starts a new chain.
 * Branches are the chains ending at nodes no other node continues, in node-id order. A node shared
 * by several branches trains only in the first: later branches keep its tokens as context with
 * mask false.
 *
 * Only trainable traces (ok, trainable seat, sampled tokens) become samples; the others give none.
 * A trainable trace must have been scored: a sampled node without advantages throws.
 */
export function traceToSamples(options: TraceToSamplesOptions): TrainingSample[] {
  const out = options.into ?? [];
  appendTraceSamples(options.trace, options.env, options.episodeId, out);
  return out;
}

/**
 * What {@link appendTraceSamples} did for one trace (a scratch object the caller reuses).
 * @internal
 */
export interface TraceSampleTally {
  /** Samples (branches) of the trace, before any zero-advantage filtering. */
  samples: number;
  /** Tokens over those samples. */
  tokens: number;
  /** Samples the zero-advantage filter dropped (only with `filterZero`). */
  droppedSamples: number;
  /** Mask bits the zero-advantage filter cleared (only with `filterZero`). */
  maskedTokens: number;
}

/**
 * Appends the samples of one trace to `out` (positional, for hot loops; see {@link traceToSamples}).
 * With `filterZero`, applies {@link filterZeroAdvantages} to each sample as it is built (the same
 * masks and the same drops, without building a dropped sample), and counts into `tally`.
 *
 * A sample's arrays may be the node's own when they would hold the same values (a branch of one
 * node: its `tokenIds`; its `mask` when no sampled token has advantage 0; its `logprobs` and
 * `advantages` when every token is sampled). Samples are read-only, as the trace is.
 * @internal
 */
export function appendTraceSamples(
  trace: Trace,
  env: string,
  episodeId: string,
  out: TrainingSample[],
  tally?: TraceSampleTally,
  filterZero = false,
): void {
  if (tally !== undefined) {
    tally.samples = 0;
    tally.tokens = 0;
    tally.droppedSamples = 0;
    tally.maskedTokens = 0;
  }
  if (!isTrainableTrace(trace)) return;
  const nodes = trace.nodes;
  // Fast path: a single token node is one branch.
  if (nodes.length === 1) {
    const node = nodes[0]!;
    if (node.tokenIds !== undefined) appendSingleNodeSample(trace, env, episodeId, node, out, tally, filterZero);
    return;
  }
  const trained = new Uint8Array(nodes.length);
  let branch = 0;
  for (const chain of tokenChains(trace)) {
    const sample = buildSample(trace, env, episodeId, chain, branch++, trained);
    if (tally !== undefined) {
      tally.samples++;
      tally.tokens += sample.tokenIds.length;
    }
    if (filterZero) {
      const masked = filterSample(sample);
      if (tally !== undefined) tally.maskedTokens += masked < 0 ? ~masked : masked;
      if (masked < 0) {
        if (tally !== undefined) tally.droppedSamples++;
        continue;
      }
    }
    out.push(sample);
  }
}

/**
 * The token branches of a trace, root first, one per node that has tokens and that no other
 * token node continues (`tokenParent`), in node order: the samples `traceToSamples` builds and
 * the wire samples the transport sends.
 */
export function tokenChains(trace: Trace): MessageNode[][] {
  const nodes = trace.nodes;
  const continued = new Uint8Array(nodes.length);
  for (const node of nodes) {
    const parent = node.tokenParent;
    if (node.tokenIds !== undefined && parent !== null && parent !== undefined) continued[parent] = 1;
  }
  const chains: MessageNode[][] = [];
  for (let i = 0; i < nodes.length; i++) {
    const leaf = nodes[i]!;
    if (leaf.tokenIds === undefined || continued[i]) continue;
    const chain: MessageNode[] = [];
    let current: MessageNode | undefined = leaf;
    while (current !== undefined) {
      chain.push(current);
      const parent: number | null | undefined = current.tokenParent;
      current = parent === null || parent === undefined ? undefined : trace.node(parent);
    }
    chains.push(chain.reverse());
  }
  return chains;
}

/**
 * The zero-advantage filter on one sample: clears mask bits with advantage 0. Returns the number
 * cleared, or its complement (`~cleared`, negative) when no trained token is left (drop it).
 */
function filterSample(sample: TrainingSample): number {
  const mask = sample.mask;
  const advantages = sample.advantages;
  let trained = 0;
  let masked = 0;
  for (let i = 0; i < mask.length; i++) {
    if (!mask[i]) continue;
    if (advantages[i] === 0) {
      mask[i] = false;
      masked++;
    } else {
      trained++;
    }
  }
  return trained > 0 ? masked : ~masked;
}

const sampledAdvantageError = (trace: Trace, node: MessageNode): ConfigError =>
  new ConfigError(
    `trace ${trace.id} (role '${trace.agent.name}'): node ${node.id} has sampled tokens ` +
      'without advantages; score the group with an algorithm before building samples',
  );

/** The one sample of a trace whose only node has tokens: what {@link buildSample} gives, sharing arrays it would only copy. */
function appendSingleNodeSample(
  trace: Trace,
  env: string,
  episodeId: string,
  node: MessageNode,
  out: TrainingSample[],
  tally: TraceSampleTally | undefined,
  filterZero: boolean,
): void {
  const ids = node.tokenIds!;
  const length = ids.length;
  const nodeMask = node.mask;
  const nodeLogprobs = node.logprobs;
  const nodeAdvantages = node.advantages;
  const nodeAdvantage = node.advantage;
  // One pass over the mask: sampled tokens, their zero advantages, and whether the advantages exist.
  let sampled = 0;
  let zeros = 0;
  if (nodeMask !== undefined) {
    for (let t = 0; t < length; t++) {
      if (nodeMask[t] !== true) continue;
      const advantage = sampledAdvantage(node, sampled);
      if (advantage === undefined) throw sampledAdvantageError(trace, node);
      if (advantage === 0) zeros++;
      sampled++;
    }
  }
  if (tally !== undefined) {
    tally.samples = 1;
    tally.tokens = length;
  }
  if (filterZero) {
    if (tally !== undefined) tally.maskedTokens = zeros;
    if (sampled === zeros) {
      // Nothing left to train: the filter drops the sample, so it is never built.
      if (tally !== undefined) tally.droppedSamples = 1;
      return;
    }
  }
  // With no sampled advantage 0, no filter ever clears a bit of this mask: the sample may share it.
  const mask = zeros === 0 && isPlainMask(nodeMask, length) ? nodeMask! : new Array<boolean>(length);
  let logprobs: number[];
  let advantages: number[];
  if (sampled > 0 && sampled === length && mask === nodeMask && isNumbers(nodeLogprobs, length)) {
    // Every token sampled: the node's logprobs (and per-token advantages) are the sample's, token for token.
    logprobs = nodeLogprobs!;
    advantages = allSampledAdvantages(nodeAdvantages, nodeAdvantage!, length);
  } else {
    logprobs = new Array<number>(length);
    advantages = new Array<number>(length);
    const own = mask !== nodeMask;
    let sampledIndex = 0;
    for (let t = 0; t < length; t++) {
      if (nodeMask !== undefined && nodeMask[t] === true) {
        const advantage = sampledAdvantage(node, sampledIndex)!;
        if (own) mask[t] = !(filterZero && advantage === 0);
        logprobs[t] = nodeLogprobs?.[sampledIndex] ?? 0;
        advantages[t] = advantage;
        sampledIndex++;
      } else {
        if (own) mask[t] = false;
        logprobs[t] = 0;
        advantages[t] = 0;
      }
    }
  }
  out.push({ tokenIds: ids, mask, logprobs, advantages, env, role: trace.agent.name, traceId: trace.id, episodeId, branch: 0 });
}

/**
 * A sample's advantages when every one of its `length` tokens is sampled: the node's per-token
 * `advantages` (cut to `length`), or `length` copies of its one `advantage`.
 */
function allSampledAdvantages(perToken: number[] | undefined, value: number, length: number): number[] {
  if (perToken !== undefined) return perToken.length === length ? perToken : perToken.slice(0, length);
  if (length === 1) return [value];
  const values = [value, value];
  for (let j = 2; j < length; j++) values.push(value);
  return values;
}

/** True when `values` holds `length` numbers (a logprob the sample would read as 0 must not be missing). */
function isNumbers(values: readonly number[] | undefined, length: number): boolean {
  if (values === undefined || values.length !== length) return false;
  for (let i = 0; i < length; i++) if (typeof values[i] !== 'number') return false;
  return true;
}

/** True when `mask` holds `length` booleans, i.e. the values a sample's mask would copy from it. */
function isPlainMask(mask: readonly boolean[] | undefined, length: number): boolean {
  if (mask === undefined || mask.length !== length) return false;
  for (let i = 0; i < length; i++) if (typeof mask[i] !== 'boolean') return false;
  return true;
}

function buildSample(
  trace: Trace,
  env: string,
  episodeId: string,
  chain: readonly MessageNode[],
  branch: number,
  trained: Uint8Array | null,
): TrainingSample {
  let length = 0;
  for (let c = 0; c < chain.length; c++) length += chain[c]!.tokenIds!.length;
  const tokenIds = new Array<number>(length);
  const mask = new Array<boolean>(length);
  const logprobs = new Array<number>(length);
  const advantages = new Array<number>(length);
  let position = 0;
  for (let c = 0; c < chain.length; c++) {
    const node = chain[c]!;
    const ids = node.tokenIds!;
    const nodeMask = node.mask;
    const alreadyTrained = trained !== null && trained[node.id] === 1;
    const nodeLogprobs = node.logprobs;
    let sampledIndex = 0;
    for (let t = 0; t < ids.length; t++, position++) {
      tokenIds[position] = ids[t]!;
      const sampled = nodeMask !== undefined && nodeMask[t] === true;
      if (sampled && !alreadyTrained) {
        const advantage = sampledAdvantage(node, sampledIndex);
        if (advantage === undefined) throw sampledAdvantageError(trace, node);
        mask[position] = true;
        logprobs[position] = nodeLogprobs?.[sampledIndex] ?? 0;
        advantages[position] = advantage;
      } else {
        mask[position] = false;
        logprobs[position] = 0;
        advantages[position] = 0;
      }
      if (sampled) sampledIndex++;
    }
    if (trained !== null) trained[node.id] = 1;
  }
  return {
    tokenIds,
    mask,
    logprobs,
    advantages,
    env,
    role: trace.agent.name,
    traceId: trace.id,
    episodeId,
    branch,
  };
}

/** Samples of every trainable trace of the episodes, in episode then completion order. */
export function episodesToSamples(options: { episodes: readonly Episode[]; into?: TrainingSample[] }): TrainingSample[] {
  const out = options.into ?? [];
  for (let e = 0; e < options.episodes.length; e++) {
    const episode = options.episodes[e]!;
    const traces = episode.traces;
    for (let t = 0; t < traces.length; t++) {
      appendTraceSamples(traces[t]!, episode.env.id, episode.id, out);
    }
  }
  return out;
}
