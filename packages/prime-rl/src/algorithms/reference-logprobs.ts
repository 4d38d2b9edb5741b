import { ConfigError, type MessageNode } from '@troupe/verifiers';

/**
 * The teacher logprobs of each sampled node, one per sampled token (mask true), kept beside the
 * trace rather than in it: they are training annotations, like advantages, but never part of the
 * recorded trace (a trace file stays what the rollout did).
 */
const stored = new WeakMap<MessageNode, readonly number[]>();

/**
 * Projects branch-aligned reference (teacher) logprobs — one per token of the branch's nodes in
 * order — onto the sampled nodes of the branch: each node with a sampled token keeps the values of
 * its sampled tokens; a node already scored (shared with an earlier branch) keeps its first values
 * (prime-rl `assign_reference_logprobs`, `src/prime_rl/orchestrator/algo/routing.py:37-50` at
 * 559b447). Throws when the values do not align with the branch's tokens.
 */
export function assignReferenceLogprobs(options: { nodes: readonly MessageNode[]; logprobs: readonly number[] }): void {
  const { nodes, logprobs } = options;
  const total = nodes.reduce((sum, node) => sum + (node.tokenIds?.length ?? 0), 0);
  if (logprobs.length !== total)
    throw new ConfigError(`reference logprobs must align with the branch's tokens: got ${logprobs.length}, expected ${total}`, {
      path: 'logprobs',
    });
  let offset = 0;
  for (const node of nodes) {
    const ids = node.tokenIds ?? [];
    const mask = node.mask ?? [];
    const end = offset + ids.length;
    if (mask.some(Boolean) && !stored.has(node)) {
      const values: number[] = [];
      for (let t = 0; t < ids.length; t++) if (mask[t]) values.push(logprobs[offset + t] as number);
      stored.set(node, values);
    }
    offset = end;
  }
}

/** The reference logprobs of a node's sampled tokens, when a teacher scored it. */
export function referenceLogprobsOf(node: MessageNode): readonly number[] | undefined {
  return stored.get(node);
}
