import type { Episode, MessageNode, Trace } from '@troupe/verifiers';
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
 * Appends the samples of one trace to `out` (positional, for hot loops; see {@link traceToSamples}).
 * @internal
 */
export function appendTraceSamples(trace: Trace, env: string, episodeId: string, out: TrainingSample[]): void {
  if (!isTrainableTrace(trace)) return;
  const nodes = trace.nodes;
  // Fast path: a single token node is one branch.
  if (nodes.length === 1) {
    const node = nodes[0]!;
    if (node.tokenIds !== undefined) out.push(buildSample(trace, env, episodeId, [node], 0, null));
    return;
  }
  const continued = new Uint8Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const parent = nodes[i]!.tokenParent;
    if (nodes[i]!.tokenIds !== undefined && parent !== null && parent !== undefined) continued[parent] = 1;
  }
  const trained = new Uint8Array(nodes.length);
  let branch = 0;
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
    chain.reverse();
    out.push(buildSample(trace, env, episodeId, chain, branch++, trained));
  }
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
    const nodeAdvantages = node.advantages;
    let sampledIndex = 0;
    for (let t = 0; t < ids.length; t++, position++) {
      tokenIds[position] = ids[t]!;
      const sampled = nodeMask !== undefined && nodeMask[t] === true;
      if (sampled && !alreadyTrained) {
        const advantage = nodeAdvantages?.[sampledIndex];
        if (advantage === undefined) {
          throw new RangeError(
            `trace ${trace.id} (role '${trace.agent.name}'): node ${node.id} has sampled tokens ` +
              'without advantages; score the group with an algorithm before building samples',
          );
        }
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
