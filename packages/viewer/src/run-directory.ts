import { closeSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { EpisodeRecord } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { EpisodeRecordSchema, openRunFile, readRunFileText, runFileLines } from '@troupe/verifiers/internal';
import { z } from 'zod';

/** One episode of a run as the viewer holds it: the validated record and its JSON text. */
export interface ViewerEpisode {
  /** The record, validated with EpisodeRecordSchema. */
  record: EpisodeRecord;
  /** The episode's JSON text as stored in traces.jsonl (served and embedded verbatim). */
  json: string;
}

/** A run directory, read for viewing. */
export interface ViewerRun {
  /** Absolute path of the run directory. */
  runDir: string;
  /** Display name (the directory's base name). */
  name: string;
  /** `config.json`, or null when the file is absent. */
  config: unknown;
  /** `summary.json`, or null when the file is absent. */
  summary: unknown;
  episodes: ViewerEpisode[];
  /** Problems met while reading (torn last line, invalid lines, unreadable files); shown on the page. */
  warnings: string[];
}

export const LoadViewerRunOptionsSchema = z.object({
  /** The run directory written by `troupe eval` (holds traces.jsonl). */
  runDir: z.string().min(1, 'runDir must not be empty'),
});
/** Options of {@link loadViewerRun}. */
export type LoadViewerRunOptions = z.infer<typeof LoadViewerRunOptionsSchema>;

/**
 * Parses the text of a traces.jsonl file. A torn last line (a run still writing, or killed) is
 * skipped with a warning; an invalid line elsewhere is skipped with a warning naming the line and
 * the field. Never throws on content.
 */
export function parseTracesJsonl(options: { text: string }): { episodes: ViewerEpisode[]; warnings: string[] } {
  const reader = new TraceLineReader();
  const { text } = options;
  const lines = text.split('\n');
  const torn = text.length > 0 && !text.endsWith('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    reader.add({ number: i + 1, text: line.replace(/\r$/, ''), complete: !(torn && i === lines.length - 1), bytes: line.length });
  }
  return { episodes: reader.episodes, warnings: reader.warnings };
}

/** Turns traces.jsonl lines into viewer episodes and warnings, one line at a time. */
class TraceLineReader {
  readonly episodes: ViewerEpisode[] = [];
  readonly warnings: string[] = [];
  private readonly seen = new Set<string>();

  add(line: { number: number; text: string | null; complete: boolean; bytes: number }): void {
    const { number, text } = line;
    if (text === null) {
      this.warnings.push(`traces.jsonl line ${number}: ${line.bytes} bytes, longer than a viewer holds; skipped`);
      return;
    }
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      if (!line.complete)
        this.warnings.push(
          `traces.jsonl: skipped a torn last line (line ${number}, ${text.length} characters without a newline)`,
        );
      else this.warnings.push(`traces.jsonl line ${number}: not valid JSON (${jsonErrorWhere(error)}); skipped`);
      return;
    }
    const parsed = EpisodeRecordSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.length ? issue.path.join('.') : '(root)';
      this.warnings.push(`traces.jsonl line ${number}: not an episode record: ${field}: ${issue?.message ?? 'invalid'}; skipped`);
      return;
    }
    if (this.seen.has(parsed.data.id)) this.warnings.push(`traces.jsonl line ${number}: duplicate episode id ${parsed.data.id}`);
    this.seen.add(parsed.data.id);
    this.episodes.push({ record: parsed.data, json: text });
  }
}

/** Where a JSON parse failed, without echoing the text (a run file may hold what the viewer must not show). */
function jsonErrorWhere(error: unknown): string {
  const position = /position (\d+)/.exec((error as Error).message)?.[1];
  return position === undefined ? 'unexpected end or token' : `at position ${position}`;
}

function readJsonFile(file: string, warnings: string[]): unknown {
  let text: string | null;
  try {
    text = readRunFileText(file);
  } catch (error) {
    warnings.push(`${basename(file)}: unreadable (${(error as Error).message})`);
    return null;
  }
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    warnings.push(`${basename(file)}: not valid JSON (${jsonErrorWhere(error)})`);
    return null;
  }
}

/**
 * Reads a run directory: traces.jsonl (required), config.json and summary.json (optional).
 * Throws a ConfigError when the directory or its traces.jsonl does not exist.
 */
export async function loadViewerRun(options: LoadViewerRunOptions): Promise<ViewerRun> {
  const { runDir } = LoadViewerRunOptionsSchema.parse(options);
  const dir = resolve(runDir);
  const tracesFile = join(dir, 'traces.jsonl');
  // Streamed line by line (any size), never through a symlink or from a FIFO.
  const fd = openRunFile(tracesFile);
  if (fd === null) throw new ConfigError(`runDir: ${dir} has no traces.jsonl (is it a run directory written by troupe eval?)`);
  const reader = new TraceLineReader();
  try {
    for (const line of runFileLines(fd)) reader.add({ ...line, bytes: line.end - line.start });
  } finally {
    closeSync(fd);
  }
  const warnings = [...reader.warnings];
  const config = readJsonFile(join(dir, 'config.json'), warnings);
  const summary = readJsonFile(join(dir, 'summary.json'), warnings);
  return { runDir: dir, name: basename(dir), config, summary, episodes: reader.episodes, warnings };
}
