import type { TrainRow } from './config.ts';

/** The optional per-token streams of a {@link TrainRow}, in packing order. */
const STREAMS = ['rlWeights', 'ceWeights', 'refKlWeights', 'refLogprobs'] as const;
type StreamName = (typeof STREAMS)[number];

/** Whether a row has a stream: absent (`undefined`), an array, or `null`. */
const ABSENT = 0;
const PRESENT = 1;
const NULL = 2;

/**
 * A batch of {@link TrainRow}s as a few typed arrays: what `workerTrainer` posts to its worker,
 * the buffers transferred rather than copied (structured cloning of a step's 1,152 rows of plain
 * arrays took ~14 ms of the orchestrator's thread per step). Numbers are kept as float64 and the
 * mask as its truth, so the rows `unpackRows` makes train exactly as the originals.
 */
export interface PackedRows {
  count: number;
  /** Row i holds tokens `offsets[i]` to `offsets[i + 1]`. */
  offsets: Int32Array;
  tokenIds: Float64Array;
  mask: Uint8Array;
  logprobs: Float64Array;
  advantages: Float64Array;
  /** A stream some row has: per row ABSENT / PRESENT / NULL, and its values (0 where absent). */
  streams: Partial<Record<StreamName, { rows: Uint8Array; values: Float64Array }>>;
}

/**
 * Packs `rows`, or returns null when a row's arrays do not all have its token count (such a batch
 * is posted as it is, so the trainer reports it as it always has).
 */
export function packRows(rows: readonly TrainRow[]): PackedRows | null {
  let total = 0;
  const present = new Set<StreamName>();
  for (const row of rows) {
    const n = row.tokenIds.length;
    if (row.mask.length !== n || row.logprobs.length !== n || row.advantages.length !== n) return null;
    for (const name of STREAMS) {
      const values = row[name];
      if (values === undefined) continue;
      present.add(name);
      if (values !== null && values.length !== n) return null;
    }
    total += n;
  }
  const packed: PackedRows = {
    count: rows.length,
    offsets: new Int32Array(rows.length + 1),
    tokenIds: new Float64Array(total),
    mask: new Uint8Array(total),
    logprobs: new Float64Array(total),
    advantages: new Float64Array(total),
    streams: {},
  };
  for (const name of present) packed.streams[name] = { rows: new Uint8Array(rows.length), values: new Float64Array(total) };
  let at = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as TrainRow;
    packed.offsets[i] = at;
    packed.tokenIds.set(row.tokenIds, at);
    packed.logprobs.set(row.logprobs, at);
    packed.advantages.set(row.advantages, at);
    const mask = row.mask;
    for (let j = 0; j < mask.length; j++) if (mask[j]) packed.mask[at + j] = 1;
    for (const name of present) {
      const stream = packed.streams[name] as { rows: Uint8Array; values: Float64Array };
      const values = row[name];
      if (values === null) stream.rows[i] = NULL;
      else if (values !== undefined) {
        stream.rows[i] = PRESENT;
        stream.values.set(values, at);
      }
    }
    at += row.tokenIds.length;
  }
  packed.offsets[rows.length] = at;
  return packed;
}

/** The buffers of `packed`, to transfer with it. */
export function packedBuffers(packed: PackedRows): ArrayBuffer[] {
  const buffers: ArrayBuffer[] = [
    packed.offsets.buffer,
    packed.tokenIds.buffer,
    packed.mask.buffer,
    packed.logprobs.buffer,
    packed.advantages.buffer,
  ] as ArrayBuffer[];
  for (const stream of Object.values(packed.streams))
    buffers.push(stream.rows.buffer as ArrayBuffer, stream.values.buffer as ArrayBuffer);
  return buffers;
}

/** The rows `packed` was made from: plain arrays, the mask as booleans, each stream as it was. */
export function unpackRows(packed: PackedRows): TrainRow[] {
  const rows: TrainRow[] = new Array(packed.count);
  const { offsets } = packed;
  for (let i = 0; i < packed.count; i++) {
    const from = offsets[i] as number;
    const to = offsets[i + 1] as number;
    const mask = new Array<boolean>(to - from);
    for (let j = from; j < to; j++) mask[j - from] = packed.mask[j] === 1;
    const row: TrainRow = {
      tokenIds: numbers(packed.tokenIds, from, to),
      mask,
      logprobs: numbers(packed.logprobs, from, to),
      advantages: numbers(packed.advantages, from, to),
    };
    for (const name of STREAMS) {
      const stream = packed.streams[name];
      if (!stream || stream.rows[i] === ABSENT) continue;
      row[name] = stream.rows[i] === NULL ? null : numbers(stream.values, from, to);
    }
    rows[i] = row;
  }
  return rows;
}

/** `values[from, to)` as a plain array (a loop: `Array.from` of a typed array is ~8× slower). */
function numbers(values: Float64Array, from: number, to: number): number[] {
  const out: number[] = [];
  for (let j = from; j < to; j++) out.push(values[j] as number);
  return out;
}
