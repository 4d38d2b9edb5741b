import type { Trace } from '@troupe/verifiers';

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
    const mask = node.mask;
    if (mask === undefined) continue;
    let count = 0;
    for (let j = 0; j < mask.length; j++) if (mask[j]) count++;
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
 * repeats a few values (binary rewards give two per group), and a fresh array per single-token
 * node, kept alive by its trace, is garbage the collector copies and promotes: that was the
 * largest cost of scoring a million one-token traces. The last two values are remembered; an
 * array is frozen when a second node shares it (nothing writes advantages in place). +0 and −0
 * are different values here (Object.is).
 */
interface Single {
  value: number;
  array: number[];
  shared: boolean;
}
let recent: Single = { value: Number.NaN, array: [], shared: false };
let previous: Single = { value: Number.NaN, array: [], shared: false };
function single(value: number): number[] {
  let hit: Single | null = null;
  if (Object.is(recent.value, value)) hit = recent;
  else if (Object.is(previous.value, value)) {
    hit = previous;
    previous = recent;
    recent = hit;
  }
  if (hit === null) {
    const evicted = previous;
    previous = recent;
    evicted.value = value;
    evicted.array = [value];
    evicted.shared = false;
    recent = evicted;
    return evicted.array;
  }
  if (!hit.shared) {
    Object.freeze(hit.array);
    hit.shared = true;
  }
  return hit.array;
}
