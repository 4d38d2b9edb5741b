import { MsgpackWriter } from './micro-batch.ts';
import type { PlannedMicroBatch, PrepareBatchOptions } from './prepare-batch.ts';
import { planBatch } from './prepare-batch.ts';

/**
 * Encodes one rank's planned micro batches straight from the samples: the same bytes as
 * `encodeMicroBatches` of the materialized batches, without building the per-token lists.
 */
export function encodePlannedMicroBatches(microBatches: readonly PlannedMicroBatch[]): Uint8Array {
  let size = 5;
  for (const batch of microBatches) {
    let tokens = batch.padding;
    for (const member of batch.members) tokens += member.length;
    size += 64 + tokens * 48 + batch.members.length * 32;
  }
  const writer = new MsgpackWriter(size);
  writer.arrayHeader(microBatches.length);
  for (const batch of microBatches) writePlanned(writer, batch);
  return writer.result();
}

/** {@link planBatch} then {@link encodePlannedMicroBatches} per rank: one step's rank payloads. */
export function packAndEncode(options: PrepareBatchOptions): Uint8Array[] {
  return planBatch(options).map(encodePlannedMicroBatches);
}

type Stream = 'rlWeights' | 'ceWeights' | 'refKlWeights';
const STREAMS: readonly [Stream, number, number][] = [
  ['rlWeights', 13, 1],
  ['ceWeights', 14, 0],
  ['refKlWeights', 15, 0],
];

/** One micro batch as prime-rl's `MicroBatch` msgpack array: fields 0–8 here, the optional 9–15 after. */
function writePlanned(writer: MsgpackWriter, batch: PlannedMicroBatch): void {
  const { members, padding, filler } = batch;
  let total = padding;
  for (const member of members) total += member.length;
  const layout = fieldLayout(batch);
  writer.arrayHeader(layout.count);

  // 0 input_ids
  writer.arrayHeader(total);
  for (const { sample, length } of members) for (let t = 0; t < length; t++) writer.int(sample.tokenIds[t]!);
  for (let p = 0; p < padding; p++) writer.int(1);
  // 1 loss_mask, in runs of equal values
  writer.arrayHeader(total);
  for (const { sample, length } of members) {
    if (filler) writer.bools(false, length);
    else writeMaskRuns(writer, sample.mask, length);
  }
  writer.bools(false, padding);
  // 2 advantages, in runs of equal values (the same bits: -0 is not 0)
  writer.arrayHeader(total);
  for (const { sample, length } of members) {
    const advantages = sample.advantages;
    if (filler || advantages == null) {
      writer.float64s(0, length);
      continue;
    }
    writeFloatRuns(writer, advantages, length);
  }
  writer.float64s(0, padding);
  // 3 inference_logprobs
  writer.arrayHeader(total);
  for (const { sample, length } of members) for (let t = 0; t < length; t++) writer.float64(sample.logprobs[t]!);
  for (let p = 0; p < padding; p++) writer.float64(0);
  // 4 position_ids
  writer.arrayHeader(total);
  for (const { length } of members) for (let t = 0; t < length; t++) writer.int(t);
  for (let p = 0; p < padding; p++) writer.int(p);
  // 5 sequence_lengths
  writeLengths(writer, batch);
  // 6 temperatures
  writer.arrayHeader(total);
  for (const { sample, length } of members) {
    const temperatures = sample.temperatures;
    if (typeof temperatures === 'number') writer.float64s(temperatures, length);
    else writeFloatRuns(writer, temperatures, length);
  }
  writer.float64s(1, padding);
  // 7 env_names: each name written once per sample, then its bytes copied
  writer.arrayHeader(total);
  for (const { sample, length } of members) writeRepeated(writer, sample.envName, length);
  writeRepeated(writer, '', padding);
  // 8 seq_lens: the same numbers as 5
  writeLengths(writer, batch);
  writeOptionalFields(writer, batch, total, layout);
}

/** How many fields a micro batch writes: 9, 10 with reference logprobs, 16 with a loss-component stream (which ones are present). */
interface FieldLayout {
  count: number;
  hasRef: boolean;
  /** Per {@link STREAMS} entry: does a member carry it (never in a filler batch). */
  hasStream: boolean[];
}

function fieldLayout(batch: PlannedMicroBatch): FieldLayout {
  const { members, filler } = batch;
  const hasRef = members.some((m) => m.sample.refLogprobs != null);
  const hasStream = STREAMS.map(([key]) => !filler && members.some((m) => m.sample[key] != null));
  let count = 9;
  if (hasRef) count = 10;
  STREAMS.forEach(([, position], index) => {
    if (hasStream[index]) count = position + 1;
  });
  return { count, hasRef, hasStream };
}

/** Fields 5 and 8: each member's length, the last one's with the padding. */
function writeLengths(writer: MsgpackWriter, batch: PlannedMicroBatch): void {
  const { members, padding } = batch;
  writer.arrayHeader(members.length);
  for (let index = 0; index < members.length; index++) {
    const length = members[index]!.length;
    writer.int(index === members.length - 1 ? length + padding : length);
  }
}

/** Fields 9–15, up to `layout.count`: ref_logprobs, three never produced, then the loss-component streams. */
function writeOptionalFields(writer: MsgpackWriter, batch: PlannedMicroBatch, total: number, layout: FieldLayout): void {
  const { members, padding } = batch;
  const { count, hasRef, hasStream } = layout;
  if (count <= 9) return;
  // 9 ref_logprobs
  if (hasRef) {
    writer.arrayHeader(total);
    for (const { sample, length } of members) {
      const ref = sample.refLogprobs;
      for (let t = 0; t < length; t++) writer.float64(ref == null ? 0 : ref[t]!);
    }
    for (let p = 0; p < padding; p++) writer.float64(0);
  } else writer.nil();
  if (count <= 10) return;
  // 10–12 routed_experts, mm_kwargs, mm_token_type_ids: never produced
  writer.nil();
  writer.nil();
  writer.nil();
  // 13–15 loss-component streams
  STREAMS.forEach(([key, position, fill], index) => {
    if (position >= count) return;
    if (!hasStream[index]) {
      writer.nil();
      return;
    }
    writer.arrayHeader(total);
    for (const { sample, length } of members) {
      const stream = sample[key];
      for (let t = 0; t < length; t++) writer.float64(stream == null ? fill : stream[t]!);
    }
    for (let p = 0; p < padding; p++) writer.float64(0);
  });
}

function writeRepeated(writer: MsgpackWriter, value: string, times: number): void {
  if (times === 0) return;
  const start = writer.offset;
  writer.string(value);
  writer.repeatLast(start, times);
}

/** The first `length` mask values, each run of equal values as one fill. */
function writeMaskRuns(writer: MsgpackWriter, mask: readonly boolean[], length: number): void {
  for (let t = 0; t < length; ) {
    const value = mask[t]!;
    let end = t + 1;
    while (end < length && mask[end] === value) end++;
    writer.bools(value, end - t);
    t = end;
  }
}

/** The first `length` values as float64s, each run of equal values (by `Object.is`) written once and copied. */
function writeFloatRuns(writer: MsgpackWriter, values: readonly number[], length: number): void {
  for (let t = 0; t < length; ) {
    const value = values[t]!;
    let end = t + 1;
    while (end < length && Object.is(values[end], value)) end++;
    writer.float64s(value, end - t);
    t = end;
  }
}
