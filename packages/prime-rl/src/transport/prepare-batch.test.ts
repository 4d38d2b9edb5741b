import { decode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { packAndEncode } from './encode-planned.ts';
import { decodeMicroBatches, encodeMicroBatches, type WireMicroBatch, type WireSample } from './micro-batch.ts';
import { balancedPartition, binCost, denseModelCostCoefficients, prepareBatch } from './prepare-batch.ts';

function sample(length: number, options: { env?: string; prompt?: number; advantage?: number; id?: number } = {}): WireSample {
  const prompt = options.prompt ?? Math.floor(length / 2);
  const id = options.id ?? length;
  return {
    tokenIds: Array.from({ length }, (_, t) => 10 + ((id * 7 + t) % 50)),
    mask: Array.from({ length }, (_, t) => t >= prompt),
    logprobs: Array.from({ length }, (_, t) => (t >= prompt ? -0.25 : 0)),
    temperatures: 0.7,
    envName: options.env ?? 'kuhn-poker',
    advantages: Array.from({ length }, (_, t) => (t >= prompt ? (options.advantage ?? 0.5) : 0)),
  };
}

const lengthsOf = (grid: WireMicroBatch[][]) => grid.map((rank) => rank.map((batch) => batch.sequenceLengths));

describe('prepareBatch', () => {
  it('packs first-fit-decreasing: longest first, each into the first bin with room', () => {
    const grid = prepareBatch({ samples: [3, 7, 5, 2, 4].map((n) => sample(n)), seqLen: 10, dataWorldSize: 1 });
    // Sorted 7,5,4,3,2: 7→bin0, 5→bin1, 4→bin1, 3→bin0, 2→bin2? no: bin0 has 10, bin1 has 9, so 2 opens bin2.
    expect(lengthsOf(grid)).toEqual([[[7, 3], [5, 4], [2]]]);
  });

  it('truncates a sample to seqLen and keeps every per-token list aligned', () => {
    const [rank] = prepareBatch({ samples: [sample(12)], seqLen: 8, dataWorldSize: 1 });
    const batch = rank![0]!;
    expect(batch.inputIds).toHaveLength(8);
    for (const list of [
      batch.lossMask,
      batch.advantages,
      batch.inferenceLogprobs,
      batch.positionIds,
      batch.temperatures,
      batch.envNames,
    ]) {
      expect(list).toHaveLength(8);
    }
    expect(batch.sequenceLengths).toEqual([8]);
    expect(batch.positionIds).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('splits the heaviest bins until the bin count is a multiple of the world size', () => {
    // One bin [6,4] for W=1; W=2 splits it into [6] and [4].
    expect(lengthsOf(prepareBatch({ samples: [sample(6), sample(4)], seqLen: 10, dataWorldSize: 1 }))).toEqual([[[6, 4]]]);
    const grid = prepareBatch({ samples: [sample(6), sample(4)], seqLen: 10, dataWorldSize: 2 });
    expect(grid.map((rank) => rank.length)).toEqual([1, 1]);
    expect(grid.flatMap((rank) => rank.map((batch) => batch.sequenceLengths)).sort()).toEqual([[4], [6]]);
  });

  it('fills with zero-loss copies when bins cannot be split, so every rank has as many micro batches', () => {
    const grid = prepareBatch({ samples: [sample(9), sample(8), sample(7)], seqLen: 10, dataWorldSize: 2 });
    expect(grid.map((rank) => rank.length)).toEqual([2, 2]);
    const all = grid.flat();
    const fillers = all.filter((batch) => batch.lossMask.every((bit) => !bit));
    expect(fillers).toHaveLength(1);
    expect(fillers[0]!.advantages.every((a) => a === 0)).toBe(true);
    // The filler copies the first bin (the 9-token sample).
    expect(fillers[0]!.sequenceLengths).toEqual([9]);
  });

  it('pads to padToMultipleOf with token 1, mask false, temperature 1, env "" and positions from 0', () => {
    const [rank] = prepareBatch({ samples: [sample(5), sample(4)], seqLen: 16, dataWorldSize: 1, padToMultipleOf: 8 });
    const batch = rank![0]!;
    expect(batch.inputIds).toHaveLength(16);
    expect(batch.sequenceLengths).toEqual([5, 11]);
    expect(batch.seqLens).toEqual([5, 11]);
    expect(batch.inputIds.slice(9)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(batch.positionIds).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6]);
    expect(batch.lossMask.slice(9).some(Boolean)).toBe(false);
    expect(batch.temperatures.slice(9)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(batch.envNames.slice(9)).toEqual(['', '', '', '', '', '', '']);
    expect(batch.temperatures.slice(0, 9).every((t) => t === 0.7)).toBe(true);
  });

  it('balances ranks by estimated FLOPs, not token count, when given coefficients', () => {
    // Four single-sample bins: 8, 8, 4+4 … with a quadratic term the long sequences weigh more.
    const samples = [sample(8, { id: 1 }), sample(8, { id: 2 }), sample(2, { id: 3 }), sample(2, { id: 4 })];
    const flat = prepareBatch({ samples, seqLen: 8, dataWorldSize: 2, cost: binCost({ linear: 1, quadratic: 10 }) });
    const loads = flat.map((rank) =>
      rank.reduce((sum, batch) => sum + binCost({ linear: 1, quadratic: 10 })(batch.sequenceLengths), 0),
    );
    expect(loads[0]).toBe(loads[1]);
  });

  it('refuses a trainable sample without advantages and the reserved env name "all"', () => {
    const bad = { ...sample(4), advantages: null };
    expect(() => prepareBatch({ samples: [bad], seqLen: 8, dataWorldSize: 1 })).toThrow(/samples\[0\].*no advantages/);
    expect(() => prepareBatch({ samples: [sample(4, { env: 'all' })], seqLen: 8, dataWorldSize: 1 })).toThrow(/reserved/);
    const short = { ...sample(4), logprobs: [0, 0] };
    expect(() => prepareBatch({ samples: [short], seqLen: 8, dataWorldSize: 1 })).toThrow(/samples\[0\]\.logprobs: has 2/);
  });

  it('gives every rank an empty list for an empty step', () => {
    expect(prepareBatch({ samples: [], seqLen: 8, dataWorldSize: 3 })).toEqual([[], [], []]);
  });
});

describe('balancedPartition', () => {
  it('finds the perfect split Karmarkar–Karp with swaps can reach', () => {
    const weights = [8, 7, 6, 5, 4, 4];
    const parts = balancedPartition(weights, 2);
    const loads = parts.map((part) => part.reduce((sum, index) => sum + weights[index]!, 0));
    expect(loads).toEqual([17, 17]);
    expect(parts.map((part) => part.length)).toEqual([3, 3]);
    expect(parts.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('is deterministic and sorts each partition by index', () => {
    const weights = Array.from({ length: 24 }, (_, i) => ((i * 37) % 11) + 1);
    const a = balancedPartition(weights, 4);
    expect(balancedPartition(weights, 4)).toEqual(a);
    for (const part of a) expect([...part].sort((x, y) => x - y)).toEqual(part);
    const loads = a.map((part) => part.reduce((sum, index) => sum + weights[index]!, 0));
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
  });
});

describe('encodeMicroBatches', () => {
  it('writes each MicroBatch as a msgpack array in field order, floats as float64, trailing defaults omitted', () => {
    const grid = prepareBatch({ samples: [sample(4, { advantage: 1 })], seqLen: 8, dataWorldSize: 1 });
    const bytes = encodeMicroBatches(grid[0]!);
    const raw = decode(bytes) as unknown[][];
    expect(raw).toHaveLength(1);
    const fields = raw[0]!;
    expect(fields).toHaveLength(9);
    expect(fields[0]).toEqual(grid[0]![0]!.inputIds);
    expect(fields[1]).toEqual([false, false, true, true]);
    expect(fields[2]).toEqual([0, 0, 1, 1]);
    expect(fields[5]).toEqual([4]);
    expect(fields[7]).toEqual(['kuhn-poker', 'kuhn-poker', 'kuhn-poker', 'kuhn-poker']);
    expect(fields[8]).toEqual([4]);
    // Advantage 0 is written as float64 (0xcb + 8 bytes), as msgspec does for list[float], never as int 0.
    const hex = Buffer.from(bytes).toString('hex');
    expect(hex).toContain(`94cb${'0'.repeat(16)}cb${'0'.repeat(16)}cb3ff0000000000000cb3ff0000000000000`);
  });

  it('writes nil for an absent field before a present one, and decodes back to the same batches', () => {
    const withWeights: WireSample = { ...sample(4), rlWeights: [0, 0, 1, 0.5] };
    const grid = prepareBatch({ samples: [withWeights, sample(3)], seqLen: 8, dataWorldSize: 1 });
    const raw = decode(encodeMicroBatches(grid[0]!)) as unknown[][];
    expect(raw[0]).toHaveLength(14);
    expect(raw[0]!.slice(9, 13)).toEqual([null, null, null, null]);
    expect(raw[0]![13]).toEqual([0, 0, 1, 0.5, 1, 1, 1]);
    const decoded = decodeMicroBatches({ bytes: encodeMicroBatches(grid[0]!) });
    expect(decoded).toEqual(grid[0]);
  });

  it('decoding names the micro batch and field of a misaligned list', () => {
    const grid = prepareBatch({ samples: [sample(4)], seqLen: 8, dataWorldSize: 1 });
    const broken = { ...grid[0]![0]!, temperatures: [1, 1] };
    expect(() => decodeMicroBatches({ bytes: encodeMicroBatches([broken]), source: 'rank_0.bin' })).toThrow(
      'rank_0.bin micro_batches[0].temperatures: has 2 entries, input_ids has 4',
    );
  });
});

describe('packAndEncode', () => {
  it('writes the same bytes as encoding the materialized micro batches, over random steps', () => {
    let seed = 99;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let c = 0; c < 40; c++) {
      const seqLen = [8, 16, 33][c % 3]!;
      const samples: WireSample[] = Array.from({ length: Math.floor(random() * 30) }, (_, i) => {
        const length = 1 + Math.floor(random() * seqLen * 1.3);
        const base = sample(length, { env: ['a', 'bb', 'kuhn-poker'][i % 3]!, id: i, advantage: random() - 0.5 });
        return {
          ...base,
          temperatures: i % 2 ? base.tokenIds.map(() => 0.5 + random()) : 1,
          ...(i % 4 === 1 ? { refLogprobs: base.tokenIds.map(() => -random()) } : {}),
          ...(i % 5 === 2 ? { rlWeights: base.tokenIds.map(() => random()) } : {}),
          ...(i % 7 === 3 ? { refKlWeights: base.tokenIds.map(() => random()) } : {}),
          // Runs of equal values are written once and copied: -0 and 0 must stay apart.
          ...(i % 6 === 4 ? { advantages: base.tokenIds.map((_, t) => (t % 3 === 0 ? -0 : 0)) } : {}),
        };
      });
      const options = {
        samples,
        seqLen,
        dataWorldSize: 1 + (c % 4),
        padToMultipleOf: [1, 4, 3][c % 3]!,
        cost: binCost({ linear: 2, quadratic: c % 2 }),
      };
      const expected = prepareBatch(options).map((rank) => Buffer.from(encodeMicroBatches(rank)).toString('hex'));
      expect(packAndEncode(options).map((bytes) => Buffer.from(bytes).toString('hex'))).toEqual(expected);
    }
  });
});

describe('denseModelCostCoefficients', () => {
  it("gives prime-rl's (linear, quadratic) FLOP coefficients of a dense decoder", () => {
    // Values printed by prime-rl's _packing_cost_coeffs (trainer/batch.py at 559b44772) for the same configs.
    expect(
      denseModelCostCoefficients({
        hiddenSize: 1024,
        intermediateSize: 3072,
        numHiddenLayers: 28,
        numAttentionHeads: 16,
        numKeyValueHeads: 8,
        headDim: 128,
        vocabSize: 151936,
      }),
    ).toEqual({ linear: 1133248512, quadratic: 114688 });
    expect(
      denseModelCostCoefficients({
        hiddenSize: 512,
        intermediateSize: 1024,
        numHiddenLayers: 4,
        numAttentionHeads: 8,
        vocabSize: 1000,
      }),
    ).toEqual({ linear: 21995520, quadratic: 4096 });
  });
});

describe("prepareBatch against prime-rl's prepare_batch", () => {
  // Expected values printed by prime-rl's own prepare_batch (trainer/batch.py at 559b44772) for
  // these inputs: per rank, per micro batch, [sequence_lengths, first token of each sample, trains?].
  const samplesOf = (lengths: number[]): WireSample[] =>
    lengths.map((n, i) => ({
      tokenIds: [100 + i, ...Array(n - 1).fill(5)],
      mask: [false, ...Array(n - 1).fill(true)],
      logprobs: [0, ...Array(n - 1).fill(-0.5)],
      temperatures: 1,
      envName: 'e',
      advantages: [0, ...Array(n - 1).fill(1)],
    }));
  const summary = (grid: WireMicroBatch[][]) =>
    grid.map((rank) =>
      rank.map((batch) => {
        const starts = batch.sequenceLengths.map((_, k) => batch.sequenceLengths.slice(0, k).reduce((a, b) => a + b, 0));
        return [batch.sequenceLengths, starts.map((start) => batch.inputIds[start]), batch.lossMask.some(Boolean)];
      }),
    );
  const twelve = [5, 3, 9, 2, 2, 7, 4, 1, 6, 8, 3, 3];
  it.each([
    {
      lengths: twelve,
      seqLen: 12,
      world: 3,
      pad: 4,
      linear: 1,
      quadratic: 0,
      expected: [
        [
          [[7, 5], [105, 100], true],
          [[8], [108], true],
        ],
        [
          [[8, 4], [109, 106], true],
          [[2, 2, 4], [103, 104, 107], true],
        ],
        [
          [[9, 3], [102, 101], true],
          [[3, 5], [110, 111], true],
        ],
      ],
    },
    {
      lengths: twelve,
      seqLen: 12,
      world: 4,
      pad: 1,
      linear: 3,
      quadratic: 2,
      expected: [
        [
          [[9], [102], true],
          [[3], [101], true],
        ],
        [
          [[6, 3, 3], [108, 110, 111], true],
          [[4], [106], true],
        ],
        [
          [[8], [109], true],
          [[2, 2, 1], [103, 104, 107], true],
        ],
        [
          [[7], [105], true],
          [[5], [100], true],
        ],
      ],
    },
    {
      lengths: [20, 11, 7, 7, 7, 3, 1, 1, 16, 9],
      seqLen: 16,
      world: 2,
      pad: 8,
      linear: 1,
      quadratic: 0,
      expected: [
        [
          [[16], [100], true],
          [[16], [108], true],
          [[16], [109], true],
        ],
        [
          [[11, 3, 1, 1], [101, 105, 106, 107], true],
          [[7, 9], [103, 104], true],
          [[8], [102], true],
        ],
      ],
    },
    {
      lengths: [4, 4, 4],
      seqLen: 8,
      world: 4,
      pad: 1,
      linear: 1,
      quadratic: 0,
      expected: [[[[4], [100], false]], [[[4], [101], true]], [[[4], [102], true]], [[[4], [100], true]]],
    },
  ])('W=$world pad=$pad cost=($linear, $quadratic)', ({ lengths, seqLen, world, pad, linear, quadratic, expected }) => {
    const grid = prepareBatch({
      samples: samplesOf(lengths),
      seqLen,
      dataWorldSize: world,
      padToMultipleOf: pad,
      cost: binCost({ linear, quadratic }),
    });
    expect(summary(grid)).toEqual(expected);
  });
});
