import { readdir, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import type { ViewerIndex } from './run-index.ts';

/** How deep below the folder run directories are looked for (`outputs/<run>` or `outputs/<group>/<run>`). */
const MAX_DEPTH = 3;

export const FindRunsOptionsSchema = z.object({
  /** A folder holding run directories (each with a traces.jsonl), e.g. `outputs/`. */
  folder: z.string().min(1, 'folder must not be empty'),
});
/** Options of {@link findRuns}. */
export type FindRunsOptions = z.infer<typeof FindRunsOptionsSchema>;

/** A run directory found in a folder. */
export interface FoundRun {
  /** Path relative to the folder, with `/` separators (the run's name in URLs). */
  name: string;
  /** Absolute path of the run directory. */
  runDir: string;
  /** traces.jsonl modification time (milliseconds since the epoch). */
  modifiedAt: number;
}

/**
 * The run directories in a folder (the folder itself when it is one), newest first. A directory
 * with a traces.jsonl is a run; its subfolders are not searched further. Hidden folders and
 * node_modules are skipped.
 */
export async function findRuns(options: FindRunsOptions): Promise<FoundRun[]> {
  const root = resolve(FindRunsOptionsSchema.parse(options).folder);
  const found: FoundRun[] = [];
  const visit = async (dir: string, depth: number): Promise<void> => {
    const traces = await stat(join(dir, 'traces.jsonl')).catch(() => null);
    if (traces?.isFile()) {
      const name = relative(root, dir).split(sep).join('/') || '.';
      found.push({ name, runDir: dir, modifiedAt: traces.mtimeMs });
      return;
    }
    if (depth >= MAX_DEPTH) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      await visit(join(dir, entry.name), depth + 1);
    }
  };
  await visit(root, 0);
  return found.sort((a, b) => b.modifiedAt - a.modifiedAt || a.name.localeCompare(b.name));
}

export const RunListEntrySchema = z.object({
  /** Path relative to the folder (`/` separators). */
  name: z.string(),
  /** traces.jsonl modification time (milliseconds since the epoch). */
  modifiedAt: z.number(),
  envs: z.array(z.string()),
  models: z.array(z.string()),
  episodes: z.number().int(),
  okEpisodes: z.number().int(),
  tasks: z.number().int(),
  /** Prompt + completion tokens over every call. */
  tokens: z.number(),
  /** Sum of reported `usage.cost` (US dollars). */
  cost: z.number(),
  /** Time during which at least one episode ran, in milliseconds. */
  wallMs: z.number().nullable(),
  warnings: z.number().int(),
  roles: z.array(
    z.object({
      name: z.string(),
      trainable: z.boolean(),
      rewardMean: z.number().nullable(),
      scored: z.number().int(),
      /** pass@1 over tasks (null when the role's rewards are not all in [0, 1]). */
      passAt1: z.number().nullable(),
    }),
  ),
  /** Set instead of the statistics when the run could not be read. */
  error: z.string().optional(),
});
/**
 * One run of a folder in the runs list (name, modification time, totals per role, or the error that
 * kept it from being read); see {@link RunListEntrySchema}.
 */
export type RunListEntry = z.infer<typeof RunListEntrySchema>;

/** One line of the runs list, from a run's index. */
export function runListEntry(found: FoundRun, index: ViewerIndex): RunListEntry {
  const { totals } = index;
  return {
    name: found.name,
    modifiedAt: found.modifiedAt,
    envs: index.run.envs,
    models: [...new Set(index.roles.flatMap((r) => r.models))],
    episodes: totals.episodes,
    okEpisodes: totals.okEpisodes,
    tasks: totals.tasks,
    tokens: totals.tokens.prompt + totals.tokens.completion,
    cost: totals.tokens.cost,
    wallMs: totals.wallMs,
    warnings: index.run.warnings.length,
    roles: index.roles.map((r) => ({
      name: r.name,
      trainable: r.trainable,
      rewardMean: r.rewardMean,
      scored: r.scored,
      passAt1: r.passAtK.find((p) => p.k === 1)?.value ?? null,
    })),
  };
}

/** A runs list line for a run that could not be read. */
export function unreadableRunEntry(found: FoundRun, error: unknown): RunListEntry {
  return {
    name: found.name,
    modifiedAt: found.modifiedAt,
    envs: [],
    models: [],
    episodes: 0,
    okEpisodes: 0,
    tasks: 0,
    tokens: 0,
    cost: 0,
    wallMs: null,
    warnings: 0,
    roles: [],
    error: (error as Error).message ?? String(error),
  };
}
