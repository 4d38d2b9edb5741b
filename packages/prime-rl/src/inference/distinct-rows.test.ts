import { describe, expect, it } from 'vitest';
import { distinctRows, FNV_OFFSET_BASIS, fnv1a } from './distinct-rows.ts';

describe('distinctRows', () => {
  it('groups equal rows in order of first appearance and keeps colliding rows apart', () => {
    const rows = [
      [1, 2],
      [3903, 2950, 1699],
      [1, 2],
      [3086, 4987, 2813],
      [3903, 2950, 1699],
    ];
    const hash = (i: number) => fnv1a(rows[i] as number[], 0, (rows[i] as number[]).length, FNV_OFFSET_BASIS ^ 3);
    // The two three-token rows hash alike (found by search), so they are told apart by content.
    expect(hash(1)).toBe(hash(3));
    const same = (a: number, b: number) => (rows[a] as number[]).join() === (rows[b] as number[]).join();
    const { slot, firsts } = distinctRows(rows.length, hash, same);
    expect([...slot]).toEqual([0, 1, 0, 2, 1]);
    expect(firsts).toEqual([0, 1, 3]);
  });

  it('hashes a range of a flat token array as FNV-1a', () => {
    const flat = Int32Array.from([9, 1, 2, 3, 9]);
    expect(fnv1a(flat, 1, 4)).toBe(fnv1a([1, 2, 3]));
    expect(fnv1a([])).toBe(FNV_OFFSET_BASIS);
    expect(fnv1a([1, 2, 3])).not.toBe(fnv1a([3, 2, 1]));
  });
});
