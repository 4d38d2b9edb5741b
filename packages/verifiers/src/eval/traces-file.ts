import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { Episode } from '../trace/episode.ts';

/** What {@link readEpisodes} returns: the episodes parsed from `traces.jsonl` and the lines it skipped. */
export interface ReadEpisodesResult {
  /** The episodes of the valid lines, in file order. */
  episodes: Episode[];
  /** Lines that could not be parsed (a torn last line after a crash, or corruption), 1-based. */
  badLines: { line: number; reason: string }[];
}

/** Reads `traces.jsonl`, skipping (and reporting) lines that are torn or invalid. */
export function readEpisodes(path: string): ReadEpisodesResult {
  if (!existsSync(path)) return { episodes: [], badLines: [] };
  const text = readFileSync(path, 'utf8');
  const episodes: Episode[] = [];
  const badLines: ReadEpisodesResult['badLines'] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      episodes.push(Episode.fromJSON(JSON.parse(line)));
    } catch (error) {
      const reason = i === lines.length - 1 ? 'torn last line (no newline)' : (error as Error).message.slice(0, 200);
      badLines.push({ line: i + 1, reason });
    }
  });
  return { episodes, badLines };
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
