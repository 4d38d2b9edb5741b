/**
 * `pnpm bench:transport`: packing + encoding throughput of one step on prime-rl's wire.
 *
 * A step of 4,096 samples (self-play-like lengths: 40–1,000 tokens, a prompt then a sampled
 * reply) is packed exactly as prime-rl's `prepare_batch` (seqLen 2,048, 8 data ranks, padded to
 * 8) and every rank's `list[MicroBatch]` is encoded as msgpack. The baseline is a plain
 * `@msgpack/msgpack` encode of the same per-sample arrays (no packing at all): the cost of just
 * serialising the data. Throughput is tokens per second of wall time, median of the repeats.
 * The last line is one JSON object: name, value, unit, baseline, ratio (ours / baseline; > 1 is
 * faster than the plain encode).
 */
import { loadavg } from 'node:os';
import { encode } from '@msgpack/msgpack';
import { encodeMicroBatches, packAndEncode, prepareBatch, type WireSample } from '../src/transport/index.ts';

const NUM_SAMPLES = 4096;
const SEQ_LEN = 2048;
const WORLD = 8;
const PAD = 8;
const REPEATS = 7;

let seed = 7;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};

const samples: WireSample[] = Array.from({ length: NUM_SAMPLES }, (_, i) => {
  const length = 40 + Math.floor(random() * 960);
  const prompt = Math.floor(length * (0.3 + random() * 0.5));
  const advantage = Math.round((random() * 2 - 1) * 1000) / 1000;
  return {
    tokenIds: Array.from({ length }, () => Math.floor(random() * 150_000)),
    mask: Array.from({ length }, (_, t) => t >= prompt),
    logprobs: Array.from({ length }, (_, t) => (t >= prompt ? -random() * 3 : 0)),
    temperatures: Array.from({ length }, (_, t) => (t >= prompt ? 0.7 : 1)),
    envName: i % 3 === 0 ? 'proposer-solver' : 'kuhn-poker',
    advantages: Array.from({ length }, (_, t) => (t >= prompt ? advantage : 0)),
  };
});
const tokens = samples.reduce((sum, sample) => sum + sample.tokenIds.length, 0);

function ours(): number {
  let bytes = 0;
  for (const payload of packAndEncode({ samples, seqLen: SEQ_LEN, dataWorldSize: WORLD, padToMultipleOf: PAD }))
    bytes += payload.length;
  return bytes;
}

/** The same through materialized micro batches (the `prepareBatch` API) and `encodeMicroBatches`. */
function materialized(): number {
  const grid = prepareBatch({ samples, seqLen: SEQ_LEN, dataWorldSize: WORLD, padToMultipleOf: PAD });
  let bytes = 0;
  for (const rank of grid) bytes += encodeMicroBatches(rank).length;
  return bytes;
}

function plain(): number {
  // The same per-sample arrays in prime-rl's TrainingSample order, encoded as they are.
  const arrays = samples.map((sample) => [
    sample.tokenIds,
    sample.mask,
    sample.logprobs,
    sample.temperatures,
    sample.envName,
    sample.advantages,
  ]);
  return encode(arrays).length;
}

function time(fn: () => number): { ms: number; bytes: number } {
  const runs: number[] = [];
  let bytes = 0;
  fn();
  for (let r = 0; r < REPEATS; r++) {
    const start = process.hrtime.bigint();
    bytes = fn();
    runs.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  runs.sort((a, b) => a - b);
  return { ms: runs[Math.floor(runs.length / 2)]!, bytes };
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));
const packed = time(ours);
const baseline = time(plain);
const grid = prepareBatch({ samples, seqLen: SEQ_LEN, dataWorldSize: WORLD, padToMultipleOf: PAD });
// Split of our time, and our encoder against @msgpack/msgpack on the same packed micro batches.
const viaMaterialized = time(materialized);
const packOnly = time(() => prepareBatch({ samples, seqLen: SEQ_LEN, dataWorldSize: WORLD, padToMultipleOf: PAD }).length);
const encodeOnly = time(() => grid.reduce((sum, rank) => sum + encodeMicroBatches(rank).length, 0));
const genericEncode = time(() =>
  grid.reduce(
    (sum, rank) =>
      sum +
      encode(
        rank.map((b) => [
          b.inputIds,
          b.lossMask,
          b.advantages,
          b.inferenceLogprobs,
          b.positionIds,
          b.sequenceLengths,
          b.temperatures,
          b.envNames,
          b.seqLens,
        ]),
      ).length,
    0,
  ),
);
const oursRate = tokens / (packed.ms / 1000);
const baselineRate = tokens / (baseline.ms / 1000);
console.error(
  `packing + encoding: ${(oursRate / 1e6).toFixed(2)} M tokens/s (${packed.ms.toFixed(1)} ms, ${(packed.bytes / 1e6).toFixed(1)} MB); ` +
    `plain msgpack encode: ${(baselineRate / 1e6).toFixed(2)} M tokens/s (${baseline.ms.toFixed(1)} ms, ${(baseline.bytes / 1e6).toFixed(1)} MB)`,
);
console.log(
  JSON.stringify({
    name: 'transport.pack-and-encode.step',
    value: Math.round(oursRate),
    unit: 'tokens/s',
    baseline: Math.round(baselineRate),
    ratio: round(oursRate / baselineRate),
    samples: NUM_SAMPLES,
    tokens,
    seqLen: SEQ_LEN,
    dataWorldSize: WORLD,
    padToMultipleOf: PAD,
    microBatchesPerRank: grid[0]!.length,
    ms: round(packed.ms, 1),
    materializedMs: round(viaMaterialized.ms, 1),
    packOnlyMs: round(packOnly.ms, 1),
    encodeOnlyMs: round(encodeOnly.ms, 1),
    genericEncodeOfPackedMs: round(genericEncode.ms, 1),
    baselineMs: round(baseline.ms, 1),
    bytes: packed.bytes,
    baselineBytes: baseline.bytes,
    repeats: REPEATS,
    loadAverage: round(loadavg()[0]!, 1),
  }),
);
