import { closeSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { Episode } from '../trace/episode.ts';
import { MAX_RUN_FILE_LINE_BYTES, openRunFile, runFileLines } from '../trace/run-file.ts';

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

/** Rewrites the file atomically with exactly these episodes (temp file + rename). */
export function rewriteEpisodes(path: string, episodes: Episode[]): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, episodes.map((e) => `${JSON.stringify(e)}\n`).join(''));
  renameSync(temp, path);
}

/** Appends one episode per line; each line is written by a single write call. */
export class EpisodeWriter {
  private readonly fd: number;
  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }
  write(episode: Episode): void {
    const line = `${JSON.stringify(episode)}\n`;
    const buffer = Buffer.from(line);
    let offset = 0;
    while (offset < buffer.length) offset += writeSync(this.fd, buffer, offset);
  }
  close(): void {
    closeSync(this.fd);
  }
}
