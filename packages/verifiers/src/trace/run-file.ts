import { closeSync, fstatSync, readSync } from 'node:fs';
import { ConfigError } from '../errors/troupe-error.ts';
import { openRegularFile } from '../util/open-regular-file.ts';

/** Bytes read at a time from a run file. */
const CHUNK_BYTES = 1 << 20;
/**
 * Longest line turned into a string (bytes). Far under V8's longest string (2^29 − 24 UTF-16 units),
 * so every line a reader keeps can also be parsed; a longer one is reported, never materialised.
 */
export const MAX_RUN_FILE_LINE_BYTES = 256 * 1024 * 1024;

/**
 * Opens a file of a run directory for reading: never through a symlink (`O_NOFOLLOW`), never
 * blocking on a FIFO (`O_NONBLOCK`), and only a regular file. Null when it does not exist; a
 * `ConfigError` naming the path otherwise. A run directory is data someone else may have written.
 */
export function openRunFile(path: string): number | null {
  return openRegularFile(path, (refusal) => {
    if (refusal.kind === 'symlink')
      return new ConfigError(`${path}: a symlink; run files are read only as regular files, never followed`);
    if (refusal.kind === 'not-regular') return new ConfigError(`${path}: not a regular file (${refusal.what}); refused`);
    return new ConfigError(`${path}: cannot be opened (${refusal.code})`, { cause: refusal.cause });
  });
}

/** Reads a small run file (`config.json`, `summary.json`) as text through {@link openRunFile}; null when absent. */
export function readRunFileText(path: string, maxBytes = 64 * 1024 * 1024): string | null {
  const fd = openRunFile(path);
  if (fd === null) return null;
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes) throw new ConfigError(`${path}: ${size} bytes, more than the ${maxBytes} read`);
    const buffer = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buffer, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    return buffer.subarray(0, at).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** One line of a run file, as {@link runFileLines} yields it. */
export interface RunFileLine {
  /** 1-based line number. */
  number: number;
  /** The line without its newline (and a trailing `\r`); null when longer than {@link MAX_RUN_FILE_LINE_BYTES}. */
  text: string | null;
  /** Byte offset of the line's first byte, and one past its last (the newline excluded). */
  start: number;
  end: number;
  /** False for a last line without a newline (torn by a crash, or still being written). */
  complete: boolean;
}

/**
 * The lines of a run file, streamed from an open descriptor (any size: only one line is held, and
 * one longer than {@link MAX_RUN_FILE_LINE_BYTES} is yielded with `text: null`). Empty lines are
 * skipped. The caller owns `fd`.
 */
export function* runFileLines(fd: number): Generator<RunFileLine> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let position = 0;
  let start = 0;
  let number = 1;
  let parts: Buffer[] = [];
  let bytes = 0;
  const take = (part: Buffer) => {
    if (bytes + part.byteLength <= MAX_RUN_FILE_LINE_BYTES) parts.push(Buffer.from(part));
    bytes += part.byteLength;
  };
  const line = (end: number, complete: boolean): RunFileLine => {
    const text = bytes > MAX_RUN_FILE_LINE_BYTES ? null : Buffer.concat(parts).toString('utf8').replace(/\r$/, '');
    return { number, text, start, end, complete };
  };
  for (;;) {
    const read = readSync(fd, buffer, 0, CHUNK_BYTES, position);
    if (read === 0) break;
    let from = 0;
    for (let at = buffer.indexOf(10, 0); at !== -1 && at < read; at = buffer.indexOf(10, at + 1)) {
      take(buffer.subarray(from, at));
      if (bytes > 0) yield line(position + at, true);
      number++;
      start = position + at + 1;
      from = at + 1;
      parts = [];
      bytes = 0;
    }
    if (from < read) take(buffer.subarray(from, read));
    position += read;
  }
  if (bytes > 0) yield line(position, false);
}
