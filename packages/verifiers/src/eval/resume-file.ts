import { closeSync, constants, fsyncSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { MAX_RUN_FILE_LINE_BYTES, openRunFile } from '../trace/run-file.ts';

/** Bytes copied at a time. */
const CHUNK_BYTES = 1 << 20;

/** Name of the file beside `traces.jsonl` that keeps the lines a resume could not read. */
export const REJECTED_TRACES_FILE = 'traces.rejected.jsonl';

/** A line of `traces.jsonl` a resume sets aside: 1-based number, why, and its byte range. */
export interface RejectedLine {
  line: number;
  reason: string;
  start: number;
  end: number;
}

/**
 * Rewrites `traces.jsonl` at `path` to the byte ranges `keep` (copied, never re-serialised, so
 * any size works) and first appends every line of `rejected` to `traces.rejected.jsonl` beside it,
 * one JSON object per line: `{"line", "reason", "rejectedAt", "text"}` with the original line as
 * `text` (a line too long for one string goes to `traces.rejected-line-<n>-<ms>.bin`, named as
 * `file`, with its `bytes`). Nothing a resume cannot read is deleted. The rejected file is fsynced before the new
 * traces file (a temp file, fsynced) is renamed over the old one.
 */
export function compactTracesFile(options: {
  path: string;
  keep: { start: number; end: number }[];
  rejected: RejectedLine[];
}): void {
  const source = openRunFile(options.path);
  if (source === null) return;
  try {
    if (options.rejected.length) {
      const out = openSync(
        join(dirname(options.path), REJECTED_TRACES_FILE),
        constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
        0o644,
      );
      try {
        const rejectedAt = new Date().toISOString();
        for (const line of options.rejected) {
          const head = `{"line":${line.line},"reason":${JSON.stringify(line.reason)},"rejectedAt":"${rejectedAt}"`;
          if (line.end - line.start > MAX_RUN_FILE_LINE_BYTES) {
            // Too long for a JSON string anyone could read back: its bytes go to a file of their own.
            const name = `traces.rejected-line-${line.line}-${Date.now()}.bin`;
            const raw = openSync(
              join(dirname(options.path), name),
              constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
              0o644,
            );
            try {
              copyRange({ from: source, to: raw, start: line.start, end: line.end, escape: false });
              fsyncSync(raw);
            } finally {
              closeSync(raw);
            }
            writeAll(out, `${head},"bytes":${line.end - line.start},"file":${JSON.stringify(name)}}\n`);
            continue;
          }
          writeAll(out, `${head},"text":"`);
          copyRange({ from: source, to: out, start: line.start, end: line.end, escape: true });
          writeAll(out, '"}\n');
        }
        fsyncSync(out);
      } finally {
        closeSync(out);
      }
    }
    const temp = `${options.path}.tmp-${process.pid}`;
    const out = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    try {
      for (const range of options.keep) {
        copyRange({ from: source, to: out, start: range.start, end: range.end, escape: false });
        writeAll(out, '\n');
      }
      fsyncSync(out);
    } finally {
      closeSync(out);
    }
    renameSync(temp, options.path);
  } finally {
    closeSync(source);
  }
}

/** Copies bytes [start, end) of `from` to `to`; with `escape`, as the inside of a JSON string. */
function copyRange(options: { from: number; to: number; start: number; end: number; escape: boolean }): void {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const decoder = new StringDecoder('utf8');
  for (let at = options.start; at < options.end; ) {
    const n = readSync(options.from, buffer, 0, Math.min(CHUNK_BYTES, options.end - at), at);
    if (n === 0) break;
    at += n;
    if (options.escape) writeAll(options.to, JSON.stringify(decoder.write(buffer.subarray(0, n))).slice(1, -1));
    else writeAll(options.to, buffer.subarray(0, n));
  }
  if (options.escape) writeAll(options.to, JSON.stringify(decoder.end()).slice(1, -1));
}

function writeAll(fd: number, data: string | Buffer): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  let at = 0;
  while (at < bytes.length) at += writeSync(fd, bytes, at);
}
