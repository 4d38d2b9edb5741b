import type { Trace } from '@troupe/verifiers';
import { maskedCount } from './trainable-traces.ts';

/**
 * Writes one advantage onto every sampled token of a trace (the scalar case of
 * `assignAdvantages`). With `share`, a single-token node gets a one-element array shared with the
 * other nodes given the same value (see {@link single}); without it (values that never repeat,
 * such as RAE's against a running baseline), a fresh one.
 */
export function assignScalarAdvantage(trace: Trace, value: number, share: boolean): void {
  if (!Number.isFinite(value)) {
    throw new RangeError(`assignAdvantages: trace ${trace.id}: the advantage must be finite, got ${value}`);
  }
  const nodes = trace.nodes;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const count = maskedCount(node.mask);
    if (count === 0) continue;
    node.advantages = count === 1 ? (share ? single(value) : [value]) : broadcast(value, count);
  }
}

function broadcast(value: number, count: number): number[] {
  const values = [value, value];
  for (let j = 2; j < count; j++) values.push(value);
  return values;
}

/**
 * One-element advantages arrays, shared between the nodes that get the same value. A group
 * repeats a few values (binary rewards give two per group; hierarchical GRPO's peer sets about a
 * dozen over a run), and a fresh array per single-token node, kept alive by its trace, is garbage
 * the collector copies and promotes: that was the largest cost of scoring a million one-token
 * traces. The last two values are remembered; a value met again while remembered is frozen (nothing
 * writes advantages in place) and kept among up to {@link REPEATED_VALUES} values that repeat
 * (forgotten all at once when full). A value seen once costs a plain array, as before. Zeros are
 * two constants (+0 and −0 stay apart).
 */
const REPEATED_VALUES = 64;
interface Single {
  value: number;
  array: number[];
  shared: boolean;
}
const repeated = new Map<number, number[]>();
const positiveZero = Object.freeze([0]) as number[];
const negativeZero = Object.freeze([-0]) as number[];
let recent: Single = { value: Number.NaN, array: [], shared: false };
let previous: Single = { value: Number.NaN, array: [], shared: false };
function single(value: number): number[] {
  if (value === 0) return Object.is(value, -0) ? negativeZero : positiveZero;
  let hit: Single | null = null;
  if (recent.value === value) hit = recent;
  else if (previous.value === value) {
    hit = previous;
    previous = recent;
    recent = hit;
  }
  if (hit !== null) {
    if (!hit.shared) {
      Object.freeze(hit.array);
      hit.shared = true;
      if (repeated.size >= REPEATED_VALUES) repeated.clear();
      repeated.set(value, hit.array);
    }
    return hit.array;
  }
  const known = repeated.get(value);
  const evicted = previous;
  previous = recent;
  evicted.value = value;
  evicted.array = known ?? [value];
  evicted.shared = known !== undefined;
  recent = evicted;
  return evicted.array;
}
