/** The FNV-1a offset basis (32-bit). */
export const FNV_OFFSET_BASIS = 0x811c9dc5;

/** 32-bit FNV-1a over `tokens[start..end)`, from `seed` (default the offset basis). */
export function fnv1a(tokens: ArrayLike<number>, start = 0, end = tokens.length, seed = FNV_OFFSET_BASIS): number {
  let h = seed;
  for (let i = start; i < end; i++) h = Math.imul(h ^ (tokens[i] as number), 0x01000193);
  return h;
}

/**
 * Rows `0..count-1` grouped by content: `slot[i]` is the distinct row (unit) row `i` belongs to,
 * `firsts[u]` the first row of unit `u`. Rows are found by `hash(i)` and told apart by `same(a, b)`
 * (rows of equal hash are compared, so a collision never merges two different rows). Self-play over
 * a small game repeats a handful of prompts hundreds of times per forward pass; the micro-batcher
 * and the policy's row sharing both group them here.
 */
export function distinctRows(
  count: number,
  hash: (row: number) => number,
  same: (a: number, b: number) => boolean,
): { slot: Int32Array; firsts: number[] } {
  const slot = new Int32Array(count);
  const firsts: number[] = [];
  // The first unit of each hash inline; units of a hash an earlier, different row holds in a list.
  const byHash = new Map<number, number>();
  let collided: Map<number, number[]> | undefined;
  for (let i = 0; i < count; i++) {
    const h = hash(i);
    let u = byHash.get(h);
    if (u === undefined) {
      u = firsts.length;
      firsts.push(i);
      byHash.set(h, u);
    } else if (!same(firsts[u] as number, i)) {
      collided ??= new Map();
      let units = collided.get(h);
      if (units === undefined) collided.set(h, (units = []));
      u = units.find((unit) => same(firsts[unit] as number, i));
      if (u === undefined) {
        u = firsts.length;
        firsts.push(i);
        units.push(u);
      }
    }
    slot[i] = u;
  }
  return { slot, firsts };
}
