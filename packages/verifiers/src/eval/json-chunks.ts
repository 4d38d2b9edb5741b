/**
 * `JSON.stringify(value)` as a list of pieces whose concatenation is exactly that text, without
 * ever building it as one string: containers are walked down to `depth` levels (calling `toJSON`
 * as `JSON.stringify` does), and each value below is stringified on its own. A run file's line
 * (an episode with every message of every trace) can then be far larger than one piece, and no
 * piece is larger than the largest value at that depth (one message node of one trace).
 *
 * Small pieces are joined up to `chunkChars` so writing them costs few calls.
 */
export function jsonChunks(value: unknown, options: { depth?: number; chunkChars?: number } = {}): string[] {
  const chunkChars = options.chunkChars ?? 1 << 20;
  const out: string[] = [];
  let pending = '';
  const push = (text: string): void => {
    if (text.length >= chunkChars) {
      if (pending) out.push(pending);
      pending = '';
      out.push(text);
      return;
    }
    pending += text;
    if (pending.length >= chunkChars) {
      out.push(pending);
      pending = '';
    }
  };
  if (!write(resolve(value, ''), options.depth ?? 5, push)) return [];
  if (pending) out.push(pending);
  return out;
}

/** The total length of `chunks` in UTF-16 code units (what a reader's string would hold). */
export function chunksLength(chunks: readonly string[]): number {
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  return length;
}

/** `value` after its `toJSON(key)`, as `JSON.stringify` sees it. */
function resolve(value: unknown, key: string): unknown {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return (value as { toJSON: (key: string) => unknown }).toJSON(key);
  }
  return value;
}

/** Whether `JSON.stringify` leaves `value` out of an object (and writes `null` for it in an array). */
function omitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/** Writes a resolved value; false when it serializes to nothing (undefined, a function, a symbol). */
function write(value: unknown, depth: number, push: (text: string) => void): boolean {
  const plain =
    depth <= 0 ||
    value === null ||
    typeof value !== 'object' ||
    value instanceof Number ||
    value instanceof String ||
    value instanceof Boolean;
  if (plain) {
    const text = JSON.stringify(value);
    if (text === undefined) return false;
    push(text);
    return true;
  }
  if (Array.isArray(value)) {
    push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) push(',');
      const item = resolve(value[i], String(i));
      if (omitted(item) || !write(item, depth - 1, push)) push('null');
    }
    push(']');
    return true;
  }
  push('{');
  let first = true;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = resolve(record[key], key);
    if (omitted(item)) continue;
    push(first ? `${JSON.stringify(key)}:` : `,${JSON.stringify(key)}:`);
    first = false;
    write(item, depth - 1, push);
  }
  push('}');
  return true;
}
