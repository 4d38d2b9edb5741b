import { decode } from '@msgpack/msgpack';
import { ParseError, WireError } from '@troupe/verifiers';

/**
 * One training sequence in prime-rl's `TrainingSample` form (per token): what the packer reads.
 * The same fields as `samples/training-sample.ts` plus per-token temperatures and prime-rl's
 * optional loss-component streams.
 */
export interface WireSample {
  tokenIds: readonly number[];
  /** True on model-sampled tokens of a trainable trace. */
  mask: readonly boolean[];
  /** Sampling logprob per token (0 on prompt tokens). */
  logprobs: readonly number[];
  /** Sampling temperature per token, or one temperature for every token. */
  temperatures: readonly number[] | number;
  /** Env name stamped on every token; `"all"` is reserved. */
  envName: string;
  /** Per-token advantages; absent is legal only for a sample with no trainable token. */
  advantages?: readonly number[] | null;
  refLogprobs?: readonly number[] | null;
  rlWeights?: readonly number[] | null;
  ceWeights?: readonly number[] | null;
  refKlWeights?: readonly number[] | null;
  /** Where the sample came from (troupe's, not on the wire): kept by the JSONL sample export. */
  provenance?: SampleProvenance;
}

/** The trace branch a wire sample was built from (dropped by packing, kept by the sample export). */
export interface SampleProvenance {
  role: string;
  traceId: string;
  episodeId: string;
  branch: number;
}

/**
 * prime-rl's `MicroBatch` (`transports/rollouts/types.py`): several samples packed end to end.
 * On the wire it is a msgpack array of these fields in this order (msgspec `array_like=True`).
 * msgspec itself writes all 16 fields, `nil` for an absent one (`omit_defaults` does not shorten an
 * array-like struct); troupe leaves trailing absent fields off, which msgspec's decoder accepts
 * (the fields after the 9th have defaults).
 */
export interface WireMicroBatch {
  inputIds: number[];
  lossMask: boolean[];
  advantages: number[];
  inferenceLogprobs: number[];
  /** Restart at 0 for every packed sample (and for the padding). */
  positionIds: number[];
  /** Length of each packed sample (the last includes padding); sums to `inputIds.length`. */
  sequenceLengths: number[];
  temperatures: number[];
  envNames: string[];
  /** Sample boundaries (equal to `sequenceLengths` for text). */
  seqLens: number[];
  refLogprobs?: number[] | null;
  /** MoE routed-expert replay `[bytes, shape, dtype]`: carried through opaquely by the decoder. */
  routedExperts?: unknown;
  /** Multimodal kwargs: carried through opaquely by the decoder. */
  mmKwargs?: unknown;
  mmTokenTypeIds?: number[] | null;
  rlWeights?: number[] | null;
  ceWeights?: number[] | null;
  refKlWeights?: number[] | null;
}

/** Field names of `MicroBatch` in wire order (index = position in the msgpack array). */
export const MICRO_BATCH_FIELDS = [
  'input_ids',
  'loss_mask',
  'advantages',
  'inference_logprobs',
  'position_ids',
  'sequence_lengths',
  'temperatures',
  'env_names',
  'seq_lens',
  'ref_logprobs',
  'routed_experts',
  'mm_kwargs',
  'mm_token_type_ids',
  'rl_weights',
  'ce_weights',
  'ref_kl_weights',
] as const;

const KEYS = [
  'inputIds',
  'lossMask',
  'advantages',
  'inferenceLogprobs',
  'positionIds',
  'sequenceLengths',
  'temperatures',
  'envNames',
  'seqLens',
  'refLogprobs',
  'routedExperts',
  'mmKwargs',
  'mmTokenTypeIds',
  'rlWeights',
  'ceWeights',
  'refKlWeights',
] as const satisfies readonly (keyof WireMicroBatch)[];

const REQUIRED = 9;
const FLOAT_FIELDS = new Set<number>([2, 3, 6, 9, 13, 14, 15]);

/**
 * Encodes one rank's `list[MicroBatch]` for msgspec's decoder: an array of arrays, floats always as
 * float64, integers in their smallest msgpack form, absent fields before a present one written as
 * nil and trailing absent fields left off (msgspec's own encoder writes them as nil; both decode
 * the same). Text only: `routedExperts` / `mmKwargs` must be absent.
 */
export function encodeMicroBatches(microBatches: readonly WireMicroBatch[]): Uint8Array {
  let size = 5;
  for (const batch of microBatches) size += estimateSize(batch);
  const writer = new MsgpackWriter(size);
  writer.arrayHeader(microBatches.length);
  for (const batch of microBatches) writeMicroBatch(writer, batch);
  return writer.result();
}

function presentCount(batch: WireMicroBatch): number {
  let count = KEYS.length;
  while (count > REQUIRED && (batch[KEYS[count - 1]!] === undefined || batch[KEYS[count - 1]!] === null)) count--;
  return count;
}

function estimateSize(batch: WireMicroBatch): number {
  const n = batch.inputIds.length;
  let strings = 0;
  let previous: string | null = null;
  let bytes = 0;
  for (const name of batch.envNames) {
    if (name !== previous) {
      bytes = 5 + textEncoder.encode(name).length;
      previous = name;
    }
    strings += bytes;
  }
  let size = 64 + n * (5 + 1 + 9 + 9 + 5 + 9) + strings + (batch.sequenceLengths.length + batch.seqLens.length) * 9;
  for (const key of ['refLogprobs', 'rlWeights', 'ceWeights', 'refKlWeights'] as const) {
    const values = batch[key];
    if (values) size += 5 + values.length * 9;
  }
  if (batch.mmTokenTypeIds) size += 5 + batch.mmTokenTypeIds.length * 5;
  return size;
}

function writeMicroBatch(writer: MsgpackWriter, batch: WireMicroBatch): void {
  const count = presentCount(batch);
  writer.arrayHeader(count);
  for (let field = 0; field < count; field++) {
    const key = KEYS[field]!;
    const value = batch[key];
    if (value === undefined || value === null) {
      writer.nil();
      continue;
    }
    if (key === 'routedExperts' || key === 'mmKwargs') {
      throw new WireError(`micro batch ${key}: the encoder writes text batches only`, { path: key });
    }
    if (key === 'lossMask') {
      const mask = value as boolean[];
      writer.arrayHeader(mask.length);
      for (let i = 0; i < mask.length; i++) writer.bool(mask[i]!);
    } else if (key === 'envNames') {
      const names = value as string[];
      writer.arrayHeader(names.length);
      let previous: string | null = null;
      let start = 0;
      let end = 0;
      for (let i = 0; i < names.length; i++) {
        const name = names[i]!;
        if (name === previous) {
          writer.copyWithin(start, end);
          continue;
        }
        start = writer.offset;
        writer.string(name);
        end = writer.offset;
        previous = name;
      }
    } else if (FLOAT_FIELDS.has(field)) {
      const values = value as number[];
      writer.arrayHeader(values.length);
      for (let i = 0; i < values.length; i++) writer.float64(values[i]!);
    } else {
      const values = value as number[];
      writer.arrayHeader(values.length);
      for (let i = 0; i < values.length; i++) writer.int(values[i]!);
    }
  }
}

/** A growable msgpack writer for the wire's few types. @internal */
export class MsgpackWriter {
  private buffer: Uint8Array;
  private view: DataView;
  offset = 0;

  constructor(size: number) {
    this.buffer = new Uint8Array(size);
    this.view = new DataView(this.buffer.buffer);
  }

  private ensure(bytes: number): void {
    if (this.offset + bytes <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.offset + bytes));
    grown.set(this.buffer.subarray(0, this.offset));
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }

  result(): Uint8Array {
    return this.buffer.subarray(0, this.offset);
  }

  nil(): void {
    this.ensure(1);
    this.buffer[this.offset++] = 0xc0;
  }

  bool(value: boolean): void {
    this.ensure(1);
    this.buffer[this.offset++] = value ? 0xc3 : 0xc2;
  }

  arrayHeader(length: number): void {
    this.ensure(5);
    if (length < 16) this.buffer[this.offset++] = 0x90 | length;
    else if (length < 0x10000) {
      this.buffer[this.offset++] = 0xdc;
      this.view.setUint16(this.offset, length);
      this.offset += 2;
    } else {
      this.buffer[this.offset++] = 0xdd;
      this.view.setUint32(this.offset, length);
      this.offset += 4;
    }
  }

  float64(value: number): void {
    this.ensure(9);
    this.buffer[this.offset++] = 0xcb;
    this.view.setFloat64(this.offset, value);
    this.offset += 8;
  }

  int(value: number): void {
    if (!Number.isSafeInteger(value)) throw new WireError(`micro batch: expected an integer, got ${value}`);
    this.ensure(9);
    const b = this.buffer;
    if (value >= 0) {
      if (value < 0x80) b[this.offset++] = value;
      else if (value < 0x100) {
        b[this.offset++] = 0xcc;
        b[this.offset++] = value;
      } else if (value < 0x10000) {
        b[this.offset++] = 0xcd;
        this.view.setUint16(this.offset, value);
        this.offset += 2;
      } else if (value < 0x100000000) {
        b[this.offset++] = 0xce;
        this.view.setUint32(this.offset, value);
        this.offset += 4;
      } else {
        b[this.offset++] = 0xcf;
        this.view.setBigUint64(this.offset, BigInt(value));
        this.offset += 8;
      }
    } else if (value >= -32) b[this.offset++] = value & 0xff;
    else if (value >= -0x80) {
      b[this.offset++] = 0xd0;
      this.view.setInt8(this.offset++, value);
    } else if (value >= -0x8000) {
      b[this.offset++] = 0xd1;
      this.view.setInt16(this.offset, value);
      this.offset += 2;
    } else if (value >= -0x80000000) {
      b[this.offset++] = 0xd2;
      this.view.setInt32(this.offset, value);
      this.offset += 4;
    } else {
      b[this.offset++] = 0xd3;
      this.view.setBigInt64(this.offset, BigInt(value));
      this.offset += 8;
    }
  }

  string(value: string): void {
    const encoded = textEncoder.encode(value);
    this.ensure(5 + encoded.length);
    const length = encoded.length;
    if (length < 32) this.buffer[this.offset++] = 0xa0 | length;
    else if (length < 0x100) {
      this.buffer[this.offset++] = 0xd9;
      this.buffer[this.offset++] = length;
    } else if (length < 0x10000) {
      this.buffer[this.offset++] = 0xda;
      this.view.setUint16(this.offset, length);
      this.offset += 2;
    } else {
      this.buffer[this.offset++] = 0xdb;
      this.view.setUint32(this.offset, length);
      this.offset += 4;
    }
    this.buffer.set(encoded, this.offset);
    this.offset += length;
  }

  /** Appends a copy of bytes `[start, end)` already written. */
  copyWithin(start: number, end: number): void {
    this.ensure(end - start);
    this.buffer.copyWithin(this.offset, start, end);
    this.offset += end - start;
  }

  /**
   * Appends `times − 1` more copies of the bytes `[start, offset)` just written (one value), each
   * copy doubling what is there: ⌈log₂ times⌉ block copies instead of one per value.
   */
  repeatLast(start: number, times: number): void {
    const size = this.offset - start;
    if (times <= 1 || size === 0) return;
    this.ensure(size * (times - 1));
    const end = start + size * times;
    let filled = this.offset;
    while (filled < end) {
      const chunk = Math.min(filled - start, end - filled);
      this.buffer.copyWithin(filled, start, start + chunk);
      filled += chunk;
    }
    this.offset = end;
  }

  /** `times` msgpack booleans `value`. */
  bools(value: boolean, times: number): void {
    this.ensure(times);
    this.buffer.fill(value ? 0xc3 : 0xc2, this.offset, this.offset + times);
    this.offset += times;
  }

  /** `times` float64 values `value` (the same bytes as `times` calls of {@link float64}). */
  float64s(value: number, times: number): void {
    if (times <= 0) return;
    const start = this.offset;
    this.float64(value);
    this.repeatLast(start, times);
  }
}

const textEncoder = new TextEncoder();

/**
 * Decodes one rank's payload (a file `rank_<r>.bin` or a ZMQ frame) into micro batches, checking
 * the layout: an array of arrays of at least the nine required fields, each per-token list as
 * long as `input_ids`. Throws a `ParseError` naming the micro batch and the field.
 */
export function decodeMicroBatches(options: { bytes: Uint8Array; source?: string }): WireMicroBatch[] {
  const source = options.source ?? 'rollouts';
  let value: unknown;
  try {
    value = decode(options.bytes);
  } catch (error) {
    throw new ParseError(`${source}: not msgpack (${(error as Error).message})`);
  }
  if (!Array.isArray(value)) throw new ParseError(`${source}: expected an array of micro batches`);
  return value.map((raw, index) => {
    const where = `${source} micro_batches[${index}]`;
    if (!Array.isArray(raw)) throw new ParseError(`${where}: expected a msgpack array (array_like MicroBatch)`);
    if (raw.length < REQUIRED || raw.length > KEYS.length) {
      throw new ParseError(`${where}: has ${raw.length} fields, expected ${REQUIRED} to ${KEYS.length}`);
    }
    const batch: Record<string, unknown> = {};
    raw.forEach((field: unknown, position: number) => {
      const name = MICRO_BATCH_FIELDS[position]!;
      if (position < REQUIRED && !Array.isArray(field)) throw new ParseError(`${where}.${name}: expected a list`);
      if (field !== null) batch[KEYS[position]!] = field;
    });
    const micro = batch as unknown as WireMicroBatch;
    const length = micro.inputIds.length;
    for (const position of [1, 2, 3, 4, 6, 7, 9, 12, 13, 14, 15]) {
      const field = micro[KEYS[position]!] as unknown[] | undefined;
      if (field !== undefined && field.length !== length) {
        throw new ParseError(`${where}.${MICRO_BATCH_FIELDS[position]}: has ${field.length} entries, input_ids has ${length}`);
      }
    }
    for (const position of [5, 8]) {
      const lengths = micro[KEYS[position]!] as number[];
      const sum = lengths.reduce((a, b) => a + b, 0);
      if (sum !== length)
        throw new ParseError(`${where}.${MICRO_BATCH_FIELDS[position]}: sums to ${sum}, input_ids has ${length}`);
    }
    return micro;
  });
}
