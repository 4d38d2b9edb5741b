import { ConfigError, WireError } from '@troupe/verifiers';
import type { TrainingSample } from './training-sample.ts';

/** Options of {@link packMicroBatches}. */
export interface PackMicroBatchesOptions {
  samples: readonly TrainingSample[];
  /** Tokens per micro-batch (prime-rl `seq_len`); every micro-batch has exactly this length. */
  microBatchLength: number;
  /**
   * What to do with a sample longer than `microBatchLength`: `'error'` (default) throws naming the
   * sample; `'truncate'` keeps its first `microBatchLength` tokens (as prime-rl does) and counts it
   * in `truncatedSamples`.
   */
  overflow?: 'error' | 'truncate';
  /** Token id written into padding (masked out). Default 0. */
  padTokenId?: number;
}

/**
 * One fixed-length row for the trainer: several samples laid end to end, then padding. Position
 * ids restart at 0 for each sample; the padding (token `padTokenId`, loss mask 0) is numbered
 * 0, 1, 2, … like one more sequence.
 */
export interface MicroBatch {
  inputIds: Int32Array;
  positionIds: Int32Array;
  /** 1 on tokens that train (the samples' mask), 0 elsewhere and on padding. */
  lossMask: Uint8Array;
  advantages: Float32Array;
  inferenceLogprobs: Float32Array;
  /** Length of each packed sample, in order; their sum is `numTokens`. */
  sampleLengths: number[];
  /** Index of each packed sample in the input array. */
  sampleIndices: number[];
  /** Env of each packed sample. */
  envs: string[];
  /** Tokens used (the rest is padding). */
  numTokens: number;
}

/** Result of {@link packMicroBatches}. */
export interface PackResult {
  microBatches: MicroBatch[];
  /** Samples cut to `microBatchLength` (only with `overflow: 'truncate'`). */
  truncatedSamples: number;
}

/**
 * First-fit-decreasing packing of samples into fixed-length micro-batches: samples sorted by
 * length (longest first, ties by input order) each go into the first micro-batch with room.
 * O(n log n) via a counting sort and a segment tree over the remaining room of each micro-batch.
 */
export function packMicroBatches(options: PackMicroBatchesOptions): PackResult {
  const { samples, microBatchLength } = options;
  const padTokenId = options.padTokenId ?? 0;
  if (!Number.isInteger(microBatchLength) || microBatchLength < 1) {
    throw new ConfigError(`microBatchLength: must be a positive integer, got ${microBatchLength}`, { path: 'microBatchLength' });
  }
  const { lengths, truncatedSamples } = cappedLengths(samples, microBatchLength, options.overflow ?? 'error');
  const order = longestFirst(lengths, microBatchLength);
  const members = firstFitBins(order, lengths, microBatchLength);
  const microBatches = members.map((indices) => fillMicroBatch(samples, lengths, indices, microBatchLength, padTokenId));
  return { microBatches, truncatedSamples };
}

/** Each sample's length, cut to `microBatchLength` under `'truncate'` (counted), else refused. */
function cappedLengths(
  samples: readonly TrainingSample[],
  microBatchLength: number,
  overflow: 'error' | 'truncate',
): { lengths: Int32Array; truncatedSamples: number } {
  const lengths = new Int32Array(samples.length);
  let truncatedSamples = 0;
  for (let i = 0; i < samples.length; i++) {
    const sample = samples[i]!;
    let length = sample.tokenIds.length;
    if (length > microBatchLength) {
      if (overflow === 'error') {
        throw new WireError(
          `sample ${i} (trace ${sample.traceId}, role '${sample.role}', branch ${sample.branch}) has ${length} tokens, ` +
            `more than the micro-batch length ${microBatchLength}; raise microBatchLength or pass overflow: 'truncate'`,
        );
      }
      length = microBatchLength;
      truncatedSamples++;
    }
    lengths[i] = length;
  }
  return { lengths, truncatedSamples };
}

/** Sample indices longest first, ties in input order: a counting sort (lengths ≤ `maxLength`). */
function longestFirst(lengths: Int32Array, maxLength: number): Int32Array {
  const n = lengths.length;
  const starts = new Int32Array(maxLength + 2);
  for (let i = 0; i < n; i++) starts[maxLength - lengths[i]! + 1]!++;
  for (let k = 1; k < starts.length; k++) starts[k]! += starts[k - 1]!;
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[starts[maxLength - lengths[i]!]!++] = i;
  return order;
}

/** The members of each bin (sample indices, in packing order) when `order` goes first-fit into bins of `room`. */
function firstFitBins(order: Int32Array, lengths: Int32Array, room: number): number[][] {
  const n = order.length;
  // Segment tree: leaf b = room left in bin b (unopened bins are empty bins); node = max of children.
  let size = 1;
  while (size < Math.max(n, 1)) size *= 2;
  const tree = new Int32Array(2 * size).fill(room);
  const binOf = new Int32Array(n);
  let numBins = 0;
  for (const index of order) {
    const length = lengths[index]!;
    let node = 1;
    while (node < size) node = tree[2 * node]! >= length ? 2 * node : 2 * node + 1;
    const bin = node - size;
    binOf[index] = bin;
    if (bin + 1 > numBins) numBins = bin + 1;
    tree[node] = tree[node]! - length;
    for (node >>= 1; node >= 1; node >>= 1) tree[node] = Math.max(tree[2 * node]!, tree[2 * node + 1]!);
  }
  const members: number[][] = Array.from({ length: numBins }, () => []);
  for (const index of order) members[binOf[index]!]!.push(index);
  return members;
}

/** One micro-batch: the samples at `indices` end to end (each cut to its length), then padding. */
function fillMicroBatch(
  samples: readonly TrainingSample[],
  lengths: Int32Array,
  indices: number[],
  microBatchLength: number,
  padTokenId: number,
): MicroBatch {
  const batch: MicroBatch = {
    inputIds: new Int32Array(microBatchLength).fill(padTokenId),
    positionIds: new Int32Array(microBatchLength),
    lossMask: new Uint8Array(microBatchLength),
    advantages: new Float32Array(microBatchLength),
    inferenceLogprobs: new Float32Array(microBatchLength),
    sampleLengths: [],
    sampleIndices: indices,
    envs: [],
    numTokens: 0,
  };
  let offset = 0;
  for (const index of indices) {
    const sample = samples[index]!;
    const length = lengths[index]!;
    for (let t = 0; t < length; t++) {
      const at = offset + t;
      batch.inputIds[at] = sample.tokenIds[t]!;
      batch.positionIds[at] = t;
      batch.lossMask[at] = sample.mask[t] ? 1 : 0;
      batch.advantages[at] = sample.advantages[t]!;
      batch.inferenceLogprobs[at] = sample.logprobs[t]!;
    }
    offset += length;
    batch.sampleLengths.push(length);
    batch.envs.push(sample.env);
  }
  for (let at = offset, p = 0; at < microBatchLength; at++, p++) batch.positionIds[at] = p;
  batch.numTokens = offset;
  return batch;
}
