import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
import { errorRecord, LimitError } from '../errors/troupe-error.ts';
import { Episode, type EpisodeRecord } from '../trace/episode.ts';
import { MAX_RUN_FILE_LINE_BYTES, openRunFile, runFileLines } from '../trace/run-file.ts';
import type { TraceError } from '../trace/trace-schema.ts';
import { jsonChunks } from './json-chunks.ts';

/** What {@link readEpisodes} returns: the episodes parsed from `traces.jsonl` and the lines it skipped. */
export interface ReadEpisodesResult {
  /** The episodes of the valid lines, in file order. */
  episodes: Episode[];
  /** Where each episode's line sits in the file (byte offsets, newline excluded), parallel to `episodes`. */
  ranges: { start: number; end: number }[];
  /**
   * Lines that could not be read (a torn last line after a crash, corruption, a record of an
   * unknown schema version, a line too long to hold), 1-based, with their byte offsets.
   */
  badLines: { line: number; reason: string; start: number; end: number; complete: boolean }[];
}

/**
 * Reads `traces.jsonl` line by line (any size: one line is held at a time), skipping (and
 * reporting) lines that are torn or invalid. Refuses (a `ConfigError` naming it) a traces file that
 * is a symlink, a FIFO or anything but a regular file; a missing one reads as empty.
 */
export function readEpisodes(path: string): ReadEpisodesResult {
  const result: ReadEpisodesResult = { episodes: [], ranges: [], badLines: [] };
  const fd = openRunFile(path);
  if (fd === null) return result;
  try {
    for (const line of runFileLines(fd)) {
      if (line.text !== null && !line.text.trim()) continue;
      const bad = (reason: string) =>
        result.badLines.push({ line: line.number, reason, start: line.start, end: line.end, complete: line.complete });
      if (!line.complete) {
        bad('torn last line (no newline)');
        continue;
      }
      if (line.text === null) {
        bad(`line of ${line.end - line.start} bytes, longer than the ${MAX_RUN_FILE_LINE_BYTES} a reader holds`);
        continue;
      }
      try {
        result.episodes.push(Episode.fromJSON(JSON.parse(line.text)));
        result.ranges.push({ start: line.start, end: line.end });
      } catch (error) {
        bad(lineError(error));
      }
    }
  } finally {
    closeSync(fd);
  }
  return result;
}

/** Why a line is not an episode: the first schema issue with its field (`version: Invalid input: expected 1`), or the JSON error. */
function lineError(error: unknown): string {
  const issue = (error as { issues?: { path: PropertyKey[]; message: string }[] }).issues?.[0];
  if (issue) return `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`.slice(0, 200);
  return (error as Error).message.slice(0, 200);
}

/** Rewrites the file atomically with exactly these episodes (temp file + rename), one line each, streamed. */
export function rewriteEpisodes(path: string, episodes: Episode[]): void {
  const temp = `${path}.tmp-${process.pid}`;
  const writer = new EpisodeWriter(temp, { truncate: true });
  try {
    for (const episode of episodes) writer.write(episode);
  } finally {
    writer.close();
  }
  renameSync(temp, path);
}

/** Options of {@link EpisodeWriter}. */
export interface EpisodeWriterOptions {
  /**
   * The longest line written, in bytes (default: the longest a reader holds,
   * `MAX_RUN_FILE_LINE_BYTES`, so every line written is read back by `--resume`, `view` and
   * `export`); a longer episode is written as a stand-in.
   */
  maxLineBytes?: number;
  /** Start the file empty instead of appending to it. */
  truncate?: boolean;
}

/**
 * Appends one episode per line, streamed: the line is serialized in pieces (never one string
 * per episode) and written piece by piece. An episode whose line would pass `maxLineBytes` is
 * written as a failed stand-in: its traces keep their rewards, stop conditions and errors but not
 * their messages, calls and info, and the episode carries a `LimitError` naming the size.
 */
export class EpisodeWriter {
  private readonly fd: number;
  private readonly maxLineBytes: number;
  constructor(path: string, options: EpisodeWriterOptions = {}) {
    this.fd = openSync(path, options.truncate ? 'w' : 'a');
    this.maxLineBytes = options.maxLineBytes ?? MAX_RUN_FILE_LINE_BYTES;
  }

  /**
   * Writes `episode` as one line. Returns null, or — when the line was too long and the stand-in
   * was written instead — the `LimitError` record the stand-in carries (the caller may add it to
   * the episode it keeps in memory).
   */
  write(episode: Episode): TraceError | null {
    let chunks = jsonChunks(episode);
    let refused: TraceError | null = null;
    let length = 1;
    for (const chunk of chunks) length += Buffer.byteLength(chunk);
    if (length > this.maxLineBytes) {
      refused = oversizedError(episode, length, this.maxLineBytes);
      chunks = [JSON.stringify(oversizedStandIn(episode, refused))];
    }
    chunks.push('\n');
    for (const chunk of chunks) {
      const buffer = Buffer.from(chunk);
      let offset = 0;
      while (offset < buffer.length) offset += writeSync(this.fd, buffer, offset);
    }
    return refused;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The error of an episode whose line would be `length` characters, over `max`. */
function oversizedError(episode: Episode, length: number, max: number): TraceError {
  const error: TraceError = {
    ...errorRecord(
      new LimitError(
        `episode ${episode.id} is ${length} bytes as one line, over the ${max} a run file holds; its traces are kept without their messages, calls and info`,
      ),
    ),
    stage: 'write',
  };
  delete error.stack;
  return error;
}

/** The record written for an episode too large to write whole: bodies dropped, `error` added. */
function oversizedStandIn(episode: Episode, error: TraceError): EpisodeRecord {
  const record = episode.toJSON();
  return {
    ...record,
    ok: false,
    errors: [...record.errors, error],
    traces: record.traces.map((trace) => ({
      ...trace,
      tools: [],
      nodes: [],
      calls: [],
      info: { omitted: 'episode too large to record' },
    })),
  };
}
