import { describe, expect, it } from 'vitest';
import type { TrainRow } from './config.ts';
import { packedBuffers, packRows, unpackRows } from './packed-rows.ts';

const row = (tokenIds: number[], extra: Partial<TrainRow> = {}): TrainRow => ({
  tokenIds,
  mask: tokenIds.map((_, j) => j === tokenIds.length - 1),
  logprobs: tokenIds.map((_, j) => (j === tokenIds.length - 1 ? -0.37091531032053 : 0)),
  advantages: tokenIds.map((_, j) => (j === tokenIds.length - 1 ? -2.377648009073404 : 0)),
  ...extra,
});

describe('packRows / unpackRows', () => {
  it('gives back every row exactly: float64 values, -0, the mask, and each stream absent, null or set', () => {
    const rows: TrainRow[] = [
      row([2, 6, 7, 2 ** 40]),
      row([3, 4], { rlWeights: [0, 0.5], ceWeights: null, refLogprobs: [-0, 1e-310] }),
      row([], {}),
      row([5, 6, 7], { ceWeights: [0, 1, 1], refKlWeights: [0, 0, 1], refLogprobs: [0, -1.5, Number.MIN_VALUE] }),
    ];
    const packed = packRows(rows);
    expect(packed).not.toBeNull();
    const back = unpackRows(structuredClone(packed!, { transfer: packedBuffers(packed!) }));
    expect(back).toEqual(rows);
    expect(Object.is(back[1]?.refLogprobs?.[0], -0)).toBe(true);
    expect('rlWeights' in (back[0] as object)).toBe(false);
    expect(back[1]?.ceWeights).toBeNull();
  });

  it('leaves a batch whose arrays disagree with its token count to be posted as it is', () => {
    expect(packRows([row([1, 2]), { ...row([1, 2]), logprobs: [0] }])).toBeNull();
    expect(packRows([row([1, 2], { rlWeights: [1, 1, 1] })])).toBeNull();
  });
});
