import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { type EpisodeRecord, EpisodeRecordSchema } from '../trace/episode.ts';

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
export type LoadViewerRunOptions = z.infer<typeof LoadViewerRunOptionsSchema>;

/**
 * Parses the text of a traces.jsonl file. A torn last line (a run still writing, or killed) is
 * skipped with a warning; an invalid line elsewhere is skipped with a warning naming the line and
 * the field. Never throws on content.
 */
export function parseTracesJsonl(options: { text: string }): { episodes: ViewerEpisode[]; warnings: string[] } {
  const episodes: ViewerEpisode[] = [];
  const warnings: string[] = [];
  const { text } = options;
  const torn = text.length > 0 && !text.endsWith('\n');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '');
    if (line.trim() === '') continue;
    const isLast = i === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      if (isLast && torn)
        warnings.push(`traces.jsonl: skipped a torn last line (line ${i + 1}, ${line.length} characters without a newline)`);
      else warnings.push(`traces.jsonl line ${i + 1}: not valid JSON (${(error as Error).message}); skipped`);
      continue;
    }
    const parsed = EpisodeRecordSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.length ? issue.path.join('.') : '(root)';
      warnings.push(`traces.jsonl line ${i + 1}: not an episode record: ${field}: ${issue?.message ?? 'invalid'}; skipped`);
      continue;
    }
    if (seen.has(parsed.data.id)) warnings.push(`traces.jsonl line ${i + 1}: duplicate episode id ${parsed.data.id}`);
    seen.add(parsed.data.id);
    episodes.push({ record: parsed.data, json: line });
  }
  return { episodes, warnings };
}

async function readJsonFile(file: string, warnings: string[]): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    warnings.push(`${basename(file)}: unreadable (${(error as Error).message})`);
    return null;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    warnings.push(`${basename(file)}: not valid JSON (${(error as Error).message})`);
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
  try {
    await stat(tracesFile);
  } catch {
    throw new ConfigError(`runDir: ${dir} has no traces.jsonl (is it a run directory written by troupe eval?)`);
  }
  const warnings: string[] = [];
  const { episodes, warnings: traceWarnings } = parseTracesJsonl({ text: await readFile(tracesFile, 'utf8') });
  warnings.push(...traceWarnings);
  const config = await readJsonFile(join(dir, 'config.json'), warnings);
  const summary = await readJsonFile(join(dir, 'summary.json'), warnings);
  return { runDir: dir, name: basename(dir), config, summary, episodes, warnings };
}
