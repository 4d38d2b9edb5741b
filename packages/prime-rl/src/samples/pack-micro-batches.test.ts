import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packMicroBatches } from './pack-micro-batches.ts';
import type { TrainingSample } from './training-sample.ts';

const sample = (length: number, id = `t${length}`): TrainingSample => ({
  tokenIds: Array.from({ length }, (_, i) => 100 + i),
  mask: Array.from({ length }, (_, i) => i > 0),
  logprobs: Array.from({ length }, (_, i) => (i > 0 ? -0.5 : 0)),
  advantages: Array.from({ length }, (_, i) => (i > 0 ? 0.25 : 0)),
  env: 'env',
  role: 'solver',
  traceId: id,
  episodeId: 'e',
  branch: 0,
});

describe('packMicroBatches', () => {
  it('packs first-fit-decreasing, restarting position ids per sample and padding with mask 0', () => {
    const { microBatches } = packMicroBatches({ samples: [sample(3), sample(6), sample(4), sample(2)], microBatchLength: 8 });
    // decreasing: 6 → bin0, 4 → bin1, 3 → bin1, 2 → bin0
    expect(microBatches.map((b) => b.sampleLengths)).toEqual([
      [6, 2],
      [4, 3],
    ]);
    const [first] = microBatches;
    expect([...first!.positionIds]).toEqual([0, 1, 2, 3, 4, 5, 0, 1]);
    expect([...first!.inputIds]).toEqual([100, 101, 102, 103, 104, 105, 100, 101]);
    expect([...first!.lossMask]).toEqual([0, 1, 1, 1, 1, 1, 0, 1]);
    expect([...microBatches[1]!.positionIds]).toEqual([0, 1, 2, 3, 0, 1, 2, 0]);
    expect(microBatches[1]!.lossMask[7]).toBe(0);
    expect(microBatches[1]!.numTokens).toBe(7);
    expect(first!.advantages[1]).toBe(0.25);
    expect(first!.inferenceLogprobs[1]).toBe(-0.5);
  });

  it('refuses a sample longer than the micro-batch, or truncates it when asked', () => {
    expect(() => packMicroBatches({ samples: [sample(9, 'long')], microBatchLength: 8 })).toThrow(
      /trace long.*9 tokens.*micro-batch length 8.*truncate/,
    );
    const { microBatches, truncatedSamples } = packMicroBatches({
      samples: [sample(9)],
      microBatchLength: 8,
      overflow: 'truncate',
    });
    expect(truncatedSamples).toBe(1);
    expect(microBatches[0]!.sampleLengths).toEqual([8]);
  });

  it('places every sample exactly once, within capacity, using the bins first-fit-decreasing would', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 16 }), { maxLength: 60 }),
        fc.integer({ min: 16, max: 40 }),
        (lengths, capacity) => {
          const samples = lengths.map((length, i) => sample(length, `t${i}`));
          const { microBatches } = packMicroBatches({ samples, microBatchLength: capacity });
          const placed = microBatches.flatMap((b) => b.sampleIndices).sort((a, b) => a - b);
          expect(placed).toEqual(lengths.map((_, i) => i));
          for (const batch of microBatches) expect(batch.numTokens).toBeLessThanOrEqual(capacity);
          // reference first-fit-decreasing with a linear scan
          const rooms: number[] = [];
          for (const length of [...lengths].sort((a, b) => b - a)) {
            const bin = rooms.findIndex((room) => room >= length);
            if (bin === -1) rooms.push(capacity - length);
            else rooms[bin]! -= length;
          }
          expect(microBatches).toHaveLength(rooms.length);
        },
      ),
    );
  });
});
