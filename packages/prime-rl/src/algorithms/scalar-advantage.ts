import type { Trace } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { hasSampledToken } from './trainable-traces.ts';

/**
 * Writes one advantage onto every node of a trace that has sampled tokens (the scalar case of
 * `assignAdvantages`): the node's `advantage`, one number for all its sampled tokens, replacing any
 * per-token `advantages` it had. A number in a field the node already has allocates nothing, where
 * a per-node array of a value that never repeats (RAE's, against a running baseline) was one new
 * object per trace for the collector to keep.
 */
export function assignScalarAdvantage(trace: Trace, value: number): void {
  if (!Number.isFinite(value)) {
    throw new ConfigError(`assignAdvantages: trace ${trace.id}: the advantage must be finite, got ${value}`, {
      path: 'advantage',
    });
  }
  const nodes = trace.nodes;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    if (!hasSampledToken(node.mask)) continue;
    node.advantage = value;
    if (node.advantages !== undefined) delete node.advantages;
  }
}
