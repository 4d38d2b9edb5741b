import { ConfigError, WireError } from '@troupe/verifiers';
import type { WireMicroBatch, WireSample } from './micro-batch.ts';

/** Estimated cost of a packed bin from its sample lengths (prime-rl's `bin_cost`). */
export type BinCost = (sequenceLengths: readonly number[]) => number;

/**
 * prime-rl's FLOP estimate of a bin: `linear·Σlen + quadratic·Σlen²`. With no coefficients it is
 * the token count (`linear = 1, quadratic = 0`), as prime-rl does without a model config.
 */
export function binCost(coefficients: { linear?: number; quadratic?: number } = {}): BinCost {
  const linear = coefficients.linear ?? 1;
  const quadratic = coefficients.quadratic ?? 0;
  return (lengths) => {
    let sum = 0;
    let squares = 0;
    for (const length of lengths) {
      sum += length;
      squares += length * length;
    }
    return linear * sum + quadratic * squares;
  };
}

/**
 * The (linear, quadratic) FLOP coefficients of a dense decoder from its Hugging Face config
 * (prime-rl's `_packing_cost_coeffs` for a model without MoE or MLA).
 */
export function denseModelCostCoefficients(config: {
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads?: number;
  headDim?: number;
  vocabSize: number;
}): { linear: number; quadratic: number } {
  const hidden = config.hiddenSize;
  const heads = config.numAttentionHeads;
  const kvChannels = config.headDim ?? Math.floor(hidden / heads);
  const groups = config.numKeyValueHeads ?? heads;
  const qkv = 2 * hidden * heads * kvChannels + 4 * hidden * groups * kvChannels;
  const layerLinear = qkv + 2 * hidden * hidden + 6 * hidden * config.intermediateSize;
  return {
    linear: config.numHiddenLayers * layerLinear + 2 * hidden * config.vocabSize,
    quadratic: config.numHiddenLayers * 2 * heads * kvChannels,
  };
}

/** Options of {@link prepareBatch}. */
export interface PrepareBatchOptions {
  samples: readonly WireSample[];
  /** Most tokens in a micro batch; longer samples are truncated (prime-rl `seq_len`). */
  seqLen: number;
  /** Data-parallel ranks of the trainer (W). */
  dataWorldSize: number;
  /** Pad each micro batch's token count to a multiple of this (context-parallel degree; default 1). */
  padToMultipleOf?: number;
  /** Cost to balance ranks by (default: token count). */
  cost?: BinCost;
}

interface Prepared {
  sample: WireSample;
  length: number;
}

interface Bin {
  members: Prepared[];
  length: number;
}

/**
 * prime-rl's `prepare_batch`: truncate each sample to `seqLen`, first-fit-decreasing into bins of
 * at most `seqLen` tokens, split the heaviest bins until their count is a multiple of the data
 * world size, pad every bin to `padToMultipleOf` (token 1, mask false, temperature 1, env ""),
 * add zero-loss copies of the first bin to a multiple of the world size, then assign bins to ranks
 * by Karmarkar–Karp on `cost` refined by swaps. Returns `list[MicroBatch]` per rank; every rank
 * gets the same number of micro batches. Deterministic: the same input gives the same bytes.
 */
export function prepareBatch(options: PrepareBatchOptions): WireMicroBatch[][] {
  return planBatch(options).map((rank) => rank.map(materializePlanned));
}

/**
 * One micro batch of a {@link planBatch} plan, before its per-token lists exist: the packed
 * samples (with their truncated lengths), the padding after them, and whether it is a zero-loss
 * filler (a copy of the first bin with mask false, advantages 0 and no loss streams).
 */
export interface PlannedMicroBatch {
  readonly members: readonly { readonly sample: WireSample; readonly length: number }[];
  readonly padding: number;
  readonly filler: boolean;
}

/**
 * The decisions of {@link prepareBatch} without building the per-token lists: which samples go
 * into which micro batch of which rank, and the padding. `encodePlannedMicroBatches` writes the
 * same bytes as `encodeMicroBatches(prepareBatch(…)[rank])` straight from the samples.
 */
export function planBatch(options: PrepareBatchOptions): PlannedMicroBatch[][] {
  const { seqLen, dataWorldSize } = options;
  const padToMultipleOf = options.padToMultipleOf ?? 1;
  const cost = options.cost ?? binCost();
  if (!Number.isInteger(seqLen) || seqLen < 1)
    throw new ConfigError(`seqLen: must be a positive integer, got ${seqLen}`, { path: 'seqLen' });
  if (!Number.isInteger(dataWorldSize) || dataWorldSize < 1) {
    throw new ConfigError(`dataWorldSize: must be a positive integer, got ${dataWorldSize}`, { path: 'dataWorldSize' });
  }
  if (!Number.isInteger(padToMultipleOf) || padToMultipleOf < 1) {
    throw new ConfigError(`padToMultipleOf: must be a positive integer, got ${padToMultipleOf}`, { path: 'padToMultipleOf' });
  }
  const prepared = options.samples.map((sample, index) => prepareSample(sample, index, seqLen));
  const bins = firstFitDecreasing(prepared, seqLen);
  if (dataWorldSize > 1) {
    const target = Math.max(Math.ceil(bins.length / dataWorldSize) * dataWorldSize, dataWorldSize);
    expandBySplitting(bins, target, cost);
  }
  const planned: PlannedMicroBatch[] = bins.map((bin) => ({
    members: bin.members,
    padding: (padToMultipleOf - (bin.length % padToMultipleOf)) % padToMultipleOf,
    filler: false,
  }));
  const missing = (dataWorldSize - (planned.length % dataWorldSize)) % dataWorldSize;
  if (missing > 0 && planned.length > 0) {
    const filler: PlannedMicroBatch = { ...planned[0]!, filler: true };
    for (let i = 0; i < missing; i++) planned.push(filler);
  }
  if (planned.length === 0) return Array.from({ length: dataWorldSize }, () => []);
  const weights = planned.map((batch) => cost(plannedSequenceLengths(batch)));
  return balancedPartition(weights, dataWorldSize).map((partition) => partition.map((index) => planned[index]!));
}

/** Sample lengths of a planned micro batch, the last including the padding (its `sequence_lengths`). */
export function plannedSequenceLengths(batch: PlannedMicroBatch): number[] {
  const lengths = batch.members.map((member) => member.length);
  if (lengths.length > 0) lengths[lengths.length - 1]! += batch.padding;
  return lengths;
}

function materializePlanned(batch: PlannedMicroBatch): WireMicroBatch {
  const built = materialize({
    members: batch.members as Prepared[],
    length: batch.members.reduce((sum, m) => sum + m.length, 0),
  });
  const padded = padMicroBatch(built, batch.padding);
  return batch.filler ? zeroLossCopy(padded) : padded;
}

function prepareSample(sample: WireSample, index: number, seqLen: number): Prepared {
  const n = sample.tokenIds.length;
  const where = `samples[${index}]`;
  if (sample.envName === 'all')
    throw new WireError(`${where}.envName: "all" is reserved for aggregate metrics`, { path: `${where}.envName` });
  const check = (name: string, values: readonly unknown[] | number | null | undefined) => {
    if (Array.isArray(values) && values.length !== n) {
      throw new WireError(`${where}.${name}: has ${values.length} entries but tokenIds has ${n}`, { path: `${where}.${name}` });
    }
  };
  check('mask', sample.mask);
  check('logprobs', sample.logprobs);
  check('temperatures', sample.temperatures);
  check('advantages', sample.advantages);
  check('refLogprobs', sample.refLogprobs);
  check('rlWeights', sample.rlWeights);
  check('ceWeights', sample.ceWeights);
  check('refKlWeights', sample.refKlWeights);
  if (sample.advantages === undefined || sample.advantages === null) {
    const rl = sample.rlWeights;
    const trains = sample.mask.some((bit, t) => bit && (rl === undefined || rl === null || rl[t] !== 0));
    if (trains)
      throw new WireError(`${where}: sample from env '${sample.envName}' has trainable tokens but no advantages`, {
        path: `${where}.advantages`,
      });
  }
  return { sample, length: Math.min(n, seqLen) };
}

function firstFitDecreasing(samples: Prepared[], seqLen: number): Bin[] {
  // Longest first, ties in input order (Python's stable sort on -len).
  const order = samples.map((_, index) => index).sort((a, b) => samples[b]!.length - samples[a]!.length || a - b);
  // First fit through a segment tree over the room left in each bin (unopened bins have seqLen).
  let size = 1;
  while (size < Math.max(samples.length, 1)) size *= 2;
  const tree = new Float64Array(2 * size).fill(seqLen);
  const bins: Bin[] = [];
  for (const index of order) {
    const item = samples[index]!;
    let node = 1;
    while (node < size) node = tree[2 * node]! >= item.length ? 2 * node : 2 * node + 1;
    const bin = node - size;
    if (bin === bins.length) bins.push({ members: [], length: 0 });
    bins[bin]!.members.push(item);
    bins[bin]!.length += item.length;
    tree[node] = tree[node]! - item.length;
    for (node >>= 1; node >= 1; node >>= 1) tree[node] = Math.max(tree[2 * node]!, tree[2 * node + 1]!);
  }
  return bins;
}

function expandBySplitting(bins: Bin[], target: number, cost: BinCost): void {
  while (bins.length < target) {
    let best = -1;
    let bestWorkload = Number.NEGATIVE_INFINITY;
    for (let index = 0; index < bins.length; index++) {
      const bin = bins[index]!;
      if (bin.members.length < 2) continue;
      const workload = cost(bin.members.map((member) => member.length));
      // max over (workload, index): ties go to the later bin.
      if (workload >= bestWorkload) {
        bestWorkload = workload;
        best = index;
      }
    }
    if (best < 0) return;
    const ranked = bins[best]!.members.map((member, position) => ({ member, position, workload: cost([member.length]) })).sort(
      (a, b) => b.workload - a.workload || a.position - b.position,
    );
    const left: Bin = { members: [], length: 0 };
    const right: Bin = { members: [], length: 0 };
    let leftWorkload = 0;
    let rightWorkload = 0;
    for (const { member, workload } of ranked) {
      const side = leftWorkload <= rightWorkload ? left : right;
      side.members.push(member);
      side.length += member.length;
      if (side === left) leftWorkload += workload;
      else rightWorkload += workload;
    }
    bins[best] = left;
    bins.push(right);
  }
}

function materialize(bin: Bin): WireMicroBatch {
  const total = bin.length;
  const batch: WireMicroBatch = {
    inputIds: new Array<number>(total),
    lossMask: new Array<boolean>(total),
    advantages: new Array<number>(total),
    inferenceLogprobs: new Array<number>(total),
    positionIds: new Array<number>(total),
    sequenceLengths: [],
    temperatures: new Array<number>(total),
    envNames: new Array<string>(total),
    seqLens: [],
  };
  const hasRef = bin.members.some((m) => m.sample.refLogprobs != null);
  const streams = {
    rlWeights: bin.members.some((m) => m.sample.rlWeights != null),
    ceWeights: bin.members.some((m) => m.sample.ceWeights != null),
    refKlWeights: bin.members.some((m) => m.sample.refKlWeights != null),
  };
  const fill = { rlWeights: 1, ceWeights: 0, refKlWeights: 0 };
  if (hasRef) batch.refLogprobs = new Array<number>(total);
  for (const key of ['rlWeights', 'ceWeights', 'refKlWeights'] as const) if (streams[key]) batch[key] = new Array<number>(total);
  let offset = 0;
  for (const { sample, length } of bin.members) {
    const advantages = sample.advantages;
    const temperatures = sample.temperatures;
    for (let t = 0; t < length; t++) {
      const at = offset + t;
      batch.inputIds[at] = sample.tokenIds[t]!;
      batch.lossMask[at] = sample.mask[t]!;
      batch.advantages[at] = advantages == null ? 0 : advantages[t]!;
      batch.inferenceLogprobs[at] = sample.logprobs[t]!;
      batch.positionIds[at] = t;
      batch.temperatures[at] = typeof temperatures === 'number' ? temperatures : temperatures[t]!;
      batch.envNames[at] = sample.envName;
    }
    if (batch.refLogprobs) {
      const ref = sample.refLogprobs;
      for (let t = 0; t < length; t++) batch.refLogprobs[offset + t] = ref == null ? 0 : ref[t]!;
    }
    for (const key of ['rlWeights', 'ceWeights', 'refKlWeights'] as const) {
      const target = batch[key];
      if (!target) continue;
      const source = sample[key];
      for (let t = 0; t < length; t++) target[offset + t] = source == null ? fill[key] : source[t]!;
    }
    batch.sequenceLengths.push(length);
    batch.seqLens.push(length);
    offset += length;
  }
  return batch;
}

function padMicroBatch(batch: WireMicroBatch, padding: number): WireMicroBatch {
  if (padding === 0) return batch;
  for (let p = 0; p < padding; p++) {
    batch.inputIds.push(1);
    batch.advantages.push(0);
    batch.lossMask.push(false);
    batch.positionIds.push(p);
    batch.inferenceLogprobs.push(0);
    batch.temperatures.push(1);
    batch.envNames.push('');
    batch.refLogprobs?.push(0);
    batch.rlWeights?.push(0);
    batch.ceWeights?.push(0);
    batch.refKlWeights?.push(0);
  }
  batch.sequenceLengths[batch.sequenceLengths.length - 1]! += padding;
  batch.seqLens[batch.seqLens.length - 1]! += padding;
  return batch;
}

/** A copy of a micro batch that trains nothing: mask false, advantages 0, no loss streams. */
function zeroLossCopy(batch: WireMicroBatch): WireMicroBatch {
  const copy: WireMicroBatch = {
    inputIds: [...batch.inputIds],
    lossMask: batch.inputIds.map(() => false),
    advantages: batch.inputIds.map(() => 0),
    inferenceLogprobs: [...batch.inferenceLogprobs],
    positionIds: [...batch.positionIds],
    sequenceLengths: [...batch.sequenceLengths],
    temperatures: [...batch.temperatures],
    envNames: [...batch.envNames],
    seqLens: [...batch.seqLens],
  };
  if (batch.refLogprobs) copy.refLogprobs = [...batch.refLogprobs];
  return copy;
}

// ---------------------------------------------------------------- Karmarkar–Karp + swaps

class WeightedSet {
  total = 0;
  items: number[] = [];

  static less(a: WeightedSet, b: WeightedSet): boolean {
    if (a.total !== b.total) return a.total < b.total;
    return listLess(a.items, b.items);
  }
}

function listLess(a: readonly number[], b: readonly number[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return a.length < b.length;
}

function sortSetsDescending(sets: WeightedSet[]): void {
  // Python's sort(reverse=True): stable, as if each comparison were reversed.
  sets.sort((a, b) => (WeightedSet.less(b, a) ? -1 : WeightedSet.less(a, b) ? 1 : 0));
}

class KKState {
  sets: WeightedSet[];

  constructor(items: [index: number, weight: number][], k: number) {
    this.sets = Array.from({ length: k }, () => new WeightedSet());
    items.forEach(([index, weight], position) => {
      const set = this.sets[position]!;
      set.items.push(index);
      set.total += weight;
    });
    sortSetsDescending(this.sets);
  }

  get spread(): number {
    return this.sets[0]!.total - this.sets[this.sets.length - 1]!.total;
  }

  merge(other: KKState): void {
    const k = this.sets.length;
    for (let i = 0; i < k; i++) {
      const into = this.sets[i]!;
      const from = other.sets[k - 1 - i]!;
      into.items.push(...from.items);
      into.total += from.total;
    }
    sortSetsDescending(this.sets);
  }

  /** Heap order: the largest spread first, then the heavier first set. */
  static less(a: KKState, b: KKState): boolean {
    if (a.spread !== b.spread) return a.spread > b.spread;
    return WeightedSet.less(b.sets[0]!, a.sets[0]!);
  }
}

// Python's heapq, step for step, so that ties break the same way.
function heapPush(heap: KKState[], item: KKState): void {
  heap.push(item);
  siftDown(heap, 0, heap.length - 1);
}

function heapPop(heap: KKState[]): KKState {
  const last = heap.pop()!;
  if (heap.length === 0) return last;
  const top = heap[0]!;
  heap[0] = last;
  siftUp(heap, 0);
  return top;
}

function siftDown(heap: KKState[], start: number, position: number): void {
  const item = heap[position]!;
  while (position > start) {
    const parentPosition = (position - 1) >> 1;
    const parent = heap[parentPosition]!;
    if (KKState.less(item, parent)) {
      heap[position] = parent;
      position = parentPosition;
      continue;
    }
    break;
  }
  heap[position] = item;
}

function siftUp(heap: KKState[], position: number): void {
  const end = heap.length;
  const start = position;
  const item = heap[position]!;
  let child = 2 * position + 1;
  while (child < end) {
    const right = child + 1;
    if (right < end && !KKState.less(heap[child]!, heap[right]!)) child = right;
    heap[position] = heap[child]!;
    position = child;
    child = 2 * position + 1;
  }
  heap[position] = item;
  siftDown(heap, start, position);
}

function karmarkarKarp(weights: readonly number[], k: number): number[][] {
  const sorted = weights.map((weight, index) => [weight, index] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const heap: KKState[] = [];
  for (let offset = 0; offset < sorted.length; offset += k) {
    const items = sorted.slice(offset, offset + k).map(([weight, index]) => [index, weight] as [number, number]);
    heapPush(heap, new KKState(items, k));
  }
  while (heap.length > 1) {
    const state = heapPop(heap);
    state.merge(heapPop(heap));
    heapPush(heap, state);
  }
  return heap[0]!.sets.map((set) => [...set.items].sort((a, b) => a - b));
}

function refineBySwapping(weights: readonly number[], partitions: number[][]): number[][] {
  const parts = partitions.map((partition) => [...partition]);
  const loads = parts.map((partition) => partition.reduce((sum, index) => sum + weights[index]!, 0));
  for (;;) {
    let bestMax = Math.max(...loads);
    let bestSpread = bestMax - Math.min(...loads);
    let best: [number, number, number, number, number, number] | null = null;
    for (let left = 0; left < parts.length; left++) {
      for (let right = left + 1; right < parts.length; right++) {
        // The loads of the other ranks do not change with this pair's swap.
        let otherMax = Number.NEGATIVE_INFINITY;
        let otherMin = Number.POSITIVE_INFINITY;
        for (let r = 0; r < loads.length; r++) {
          if (r === left || r === right) continue;
          otherMax = Math.max(otherMax, loads[r]!);
          otherMin = Math.min(otherMin, loads[r]!);
        }
        const leftPart = parts[left]!;
        const rightPart = parts[right]!;
        for (let lp = 0; lp < leftPart.length; lp++) {
          const leftWeight = weights[leftPart[lp]!]!;
          for (let rp = 0; rp < rightPart.length; rp++) {
            const rightWeight = weights[rightPart[rp]!]!;
            const newLeft = loads[left]! - leftWeight + rightWeight;
            const newRight = loads[right]! - rightWeight + leftWeight;
            const max = Math.max(otherMax, newLeft, newRight);
            const spread = max - Math.min(otherMin, newLeft, newRight);
            if (max < bestMax || (max === bestMax && spread < bestSpread)) {
              bestMax = max;
              bestSpread = spread;
              best = [left, right, lp, rp, newLeft, newRight];
            }
          }
        }
      }
    }
    if (best === null) return parts;
    const [left, right, lp, rp, newLeft, newRight] = best;
    const swapped = parts[left]![lp]!;
    parts[left]![lp] = parts[right]![rp]!;
    parts[right]![rp] = swapped;
    loads[left] = newLeft;
    loads[right] = newRight;
  }
}

/**
 * Splits item indices into `partitions` groups of near-equal total weight (prime-rl's
 * `balanced_partition`): Karmarkar–Karp's largest differencing, then pairwise swaps while they
 * lower the heaviest load (then the spread). `weights.length` must be a positive multiple of
 * `partitions`.
 */
export function balancedPartition(weights: readonly number[], partitions: number): number[][] {
  if (weights.length < partitions || weights.length % partitions !== 0) {
    throw new ConfigError(`balancedPartition: ${weights.length} items is not a positive multiple of ${partitions}`, {
      path: 'weights',
    });
  }
  return refineBySwapping(weights, karmarkarKarp(weights, partitions));
}
