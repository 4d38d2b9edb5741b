import { EnvError, type Episode, type Trace } from '@troupe/verifiers';

/** Number of sampled tokens (mask bits set) of one node's mask; 0 without a mask. */
export function maskedCount(mask: Trace['nodes'][number]['mask']): number {
  if (mask === undefined) return 0;
  let count = 0;
  for (let j = 0; j < mask.length; j++) if (mask[j]) count++;
  return count;
}

/** Number of sampled tokens (mask bits set) over all nodes of a trace. */
export function sampledTokenCount(trace: Trace): number {
  let count = 0;
  const nodes = trace.nodes;
  for (let i = 0; i < nodes.length; i++) count += maskedCount(nodes[i]!.mask);
  return count;
}

/** True when one node's mask has a bit set (the node has a sampled token). */
export function hasSampledToken(mask: Trace['nodes'][number]['mask']): boolean {
  if (mask === undefined) return false;
  for (let j = 0; j < mask.length; j++) if (mask[j]) return true;
  return false;
}

/** True when at least one token of the trace was sampled by the model (a mask bit is set). */
export function hasSampledTokens(trace: Trace): boolean {
  const nodes = trace.nodes;
  for (let i = 0; i < nodes.length; i++) if (hasSampledToken(nodes[i]!.mask)) return true;
  return false;
}

/**
 * A trace trains when it is error-free (`ok`), its seat is trainable (`agent.trainable`, stamped
 * by the env) and it has sampled tokens. Built-in algorithms score only these; the others get no
 * advantage, enter no baseline and never become training samples.
 */
export function isTrainableTrace(trace: Trace): boolean {
  return trace.ok && trace.agent.trainable && hasSampledTokens(trace);
}

/** The trainable traces of the episodes: episodes in the given order, traces in completion order. */
export function* iterTrainableTraces(episodes: readonly Episode[] | Episode): Generator<Trace> {
  const list = Array.isArray(episodes) ? episodes : [episodes as Episode];
  for (const episode of list) for (const trace of episode.traces) if (isTrainableTrace(trace)) yield trace;
}

/** Same traces as {@link iterTrainableTraces}, collected into an array (faster in hot loops). */
export function trainableTraces(episodes: readonly Episode[], into: Trace[] = []): Trace[] {
  for (let e = 0; e < episodes.length; e++) {
    const traces = episodes[e]!.traces;
    for (let t = 0; t < traces.length; t++) {
      const trace = traces[t]!;
      if (isTrainableTrace(trace)) into.push(trace);
    }
  }
  return into;
}

/** True when some trace of the episodes trains. */
export function hasTrainableTrace(episodes: readonly Episode[] | Episode): boolean {
  const list = Array.isArray(episodes) ? episodes : [episodes as Episode];
  for (const episode of list) for (const trace of episode.traces) if (isTrainableTrace(trace)) return true;
  return false;
}

/**
 * A failed episode (`ok === false`: an error of its own or a failed trace) must not train any of
 * its seats: every trace still `ok` gets an `EnvError` recorded (stage `episode`), which makes it
 * untrainable. Returns the number of traces marked. A no-op on an ok episode.
 */
export function markFailedEpisode(episode: Episode): number {
  if (episode.ok) return 0;
  let marked = 0;
  for (const trace of episode.traces) {
    if (!trace.ok) continue;
    trace.recordError(
      new EnvError(`episode ${episode.id} failed, so its trace for role '${trace.agent.name}' does not train`),
      'episode',
    );
    marked++;
  }
  return marked;
}

/**
 * Reward of a trace (Σ score·weight over non-null rewards) without allocating; the same value as
 * `trace.reward`.
 */
export function traceReward(trace: Trace): number {
  const rewards = trace.rewards;
  let total = 0;
  for (const name in rewards) {
    const reward = rewards[name];
    if (reward) total += reward.score * reward.weight;
  }
  return total;
}
