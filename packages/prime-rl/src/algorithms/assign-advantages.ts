import type { Trace } from '@troupe/verifiers';
import { assignScalarAdvantage } from './scalar-advantage.ts';
import { maskedCount, sampledTokenCount } from './trainable-traces.ts';

/**
 * Writes advantages onto the sampled nodes of a trace (`node.advantages`, one value per sampled
 * token of the node, i.e. per `true` in its mask).
 *
 * - a number is broadcast to every sampled token;
 * - a list must hold exactly one value per sampled token of the trace, in graph order (nodes by
 *   id, tokens in order), else a `RangeError` naming both counts is thrown and nothing is written.
 *
 * Unsampled tokens get no advantage here; they become 0 when the trace is turned into samples.
 */
export function assignAdvantages(trace: Trace, advantages: number | readonly number[]): void {
  const nodes = trace.nodes;
  if (typeof advantages === 'number') {
    assignScalarAdvantage(trace, advantages, true);
    return;
  }
  const expected = sampledTokenCount(trace);
  if (advantages.length !== expected) {
    throw new RangeError(
      `assignAdvantages: trace ${trace.id} (role '${trace.agent.name}') has ${expected} sampled tokens ` +
        `but ${advantages.length} advantages were given; give one per sampled token in graph order, or a scalar`,
    );
  }
  for (let i = 0; i < advantages.length; i++) {
    if (!Number.isFinite(advantages[i])) {
      throw new RangeError(`assignAdvantages: trace ${trace.id}: advantage [${i}] must be finite, got ${advantages[i]}`);
    }
  }
  let offset = 0;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const count = maskedCount(node.mask);
    if (count === 0) continue;
    node.advantages = advantages.slice(offset, offset + count);
    offset += count;
  }
}

/** Removes any advantages from the trace's nodes. */
export function clearAdvantages(trace: Trace): void {
  for (const node of trace.nodes) delete node.advantages;
}

/** `count` copies of `value`, built as a double array from the start (no elements-kind transition). */
