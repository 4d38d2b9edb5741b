import type { Trace } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { assignScalarAdvantage } from './scalar-advantage.ts';
import { maskedCount, sampledTokenCount } from './trainable-traces.ts';

/**
 * Writes advantages onto the sampled nodes of a trace (the nodes with a `true` in their mask).
 *
 * - a number goes to every sampled token: each sampled node's `advantage` (one number per node);
 * - a list must hold exactly one value per sampled token of the trace, in graph order (nodes by
 *   id, tokens in order), else a `RangeError` naming both counts is thrown and nothing is written.
 *   Each sampled node gets its share as `advantages` (one value per sampled token).
 *
 * Either way a node keeps one of the two forms; `sampledAdvantage` (from `@troupe/verifiers`)
 * reads a token's value from whichever it has.
 * Unsampled tokens get no advantage here; they become 0 when the trace is turned into samples.
 */
export function assignAdvantages(trace: Trace, advantages: number | readonly number[]): void {
  const nodes = trace.nodes;
  if (typeof advantages === 'number') {
    assignScalarAdvantage(trace, advantages);
    return;
  }
  const expected = sampledTokenCount(trace);
  if (advantages.length !== expected) {
    throw new ConfigError(
      `assignAdvantages: trace ${trace.id} (role '${trace.agent.name}') has ${expected} sampled tokens ` +
        `but ${advantages.length} advantages were given; give one per sampled token in graph order, or a scalar`,
      { path: 'advantages' },
    );
  }
  for (let i = 0; i < advantages.length; i++) {
    if (!Number.isFinite(advantages[i])) {
      throw new ConfigError(`assignAdvantages: trace ${trace.id}: advantage [${i}] must be finite, got ${advantages[i]}`, {
        path: `advantages[${i}]`,
      });
    }
  }
  let offset = 0;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const count = maskedCount(node.mask);
    if (count === 0) continue;
    node.advantages = advantages.slice(offset, offset + count);
    if (node.advantage !== undefined) delete node.advantage;
    offset += count;
  }
}

/** Removes any advantages (either form) from the trace's nodes. */
export function clearAdvantages(trace: Trace): void {
  for (const node of trace.nodes) {
    delete node.advantage;
    delete node.advantages;
  }
}
