import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { ConfigError } from '@troupe/verifiers';

/** Read size while scanning `metrics.jsonl`. */
const CHUNK_BYTES = 1 << 20;

/**
 * Cuts the metrics file at `path` to the steps up to `step` (those of the checkpoint a run resumes
 * from): truncated at the first complete line whose `step` is later, or after the last complete
 * line (a line torn by a crash). Lines before the cut are kept byte for byte, including ones that
 * do not parse. Streams the file (any size), never follows a symlink, refuses a non-regular file,
 * and creates an empty file when there is none.
 */
export async function keepMetricsThrough(path: string, step: number): Promise<void> {
  const handle = await open(
    path,
    constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    0o644,
  ).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ELOOP') throw new ConfigError(`${path}: a symlink; run files are never followed`, { path });
    throw error;
  });
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ConfigError(`${path}: not a regular file`, { path });
    const cut = await cutOffset(handle, step);
    if (cut < stat.size) {
      await handle.truncate(cut);
      await handle.sync();
    }
  } finally {
    await handle.close();
  }
}

/** Longest metrics line parsed; a longer one is kept as it is (never a reason to cut). */
const MAX_LINE_BYTES = 1 << 20;

/** Byte offset to truncate at: the start of the first complete line of a later step, else the end of the last complete line. */
async function cutOffset(handle: FileHandle, step: number): Promise<number> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let position = 0;
  let lineStart = 0;
  let line: Buffer[] = [];
  let lineBytes = 0;
  const take = (part: Buffer) => {
    if (lineBytes + part.byteLength <= MAX_LINE_BYTES) line.push(Buffer.from(part));
    lineBytes += part.byteLength;
  };
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) return lineStart;
    let from = 0;
    for (let at = buffer.indexOf(10, 0); at !== -1 && at < bytesRead; at = buffer.indexOf(10, at + 1)) {
      take(buffer.subarray(from, at));
      if (lineBytes <= MAX_LINE_BYTES && laterStep(Buffer.concat(line).toString('utf8'), step)) return lineStart;
      lineStart = position + at + 1;
      from = at + 1;
      line = [];
      lineBytes = 0;
    }
    if (from < bytesRead) take(buffer.subarray(from, bytesRead));
    position += bytesRead;
  }
}

/** True when a metrics line is a JSON object whose `step` is after `step`. */
function laterStep(text: string, step: number): boolean {
  try {
    const value = JSON.parse(text) as { step?: unknown } | null;
    return typeof value?.step === 'number' && value.step > step;
  } catch {
    return false;
  }
}
