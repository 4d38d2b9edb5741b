// Shared by the `pnpm experiment:*` scripts: runs arms × seeds at one budget, summarises each
// arm as mean ± std over seeds, prints markdown tables on stdout, progress on stderr, and writes
// the JSON of every run.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { readMetrics, type StepMetrics, train } from './run.ts';

/** One arm: a name and how to build its run config for a seed. */
export interface ExperimentArm {
  name: string;
  /** Short name for directories. */
  id: string;
  config(seed: number): Record<string, unknown>;
}

/** One column of a table: how to read a number from a finished run. */
export interface ExperimentColumn {
  name: string;
  value(run: { metrics: StepMetrics[]; last: StepMetrics }): number;
}

/** Mean and sample standard deviation. */
export function meanStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const std = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(values.length - 1, 1));
  return { mean, std };
}

/** Mean over the steps of a metric (the steps that logged it). */
export function meanOver(metrics: readonly StepMetrics[], key: string): number {
  const values = metrics.map((m) => m[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
}

/** A markdown table: one row per arm, `mean ± std` over seeds per column. */
export function markdownTable(options: {
  title: string;
  columns: readonly string[];
  rows: readonly { name: string; values: readonly (readonly number[])[] }[];
  digits?: number;
}): string {
  const digits = options.digits ?? 3;
  const cell = (xs: readonly number[]) => {
    const { mean, std } = meanStd(xs);
    return Number.isFinite(mean) ? `${mean.toFixed(digits)} ± ${std.toFixed(digits)}` : 'n/a';
  };
  return [
    `| ${options.title} | ${options.columns.join(' | ')} |`,
    `|${['', ...options.columns].map(() => '---').join('|')}|`,
    ...options.rows.map((r) => `| ${r.name} | ${r.values.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** Runs every arm on every seed (arms in turn, seeds in turn) and returns the per-run columns. */
export async function runExperiment(options: {
  name: string;
  arms: readonly ExperimentArm[];
  seeds: readonly number[];
  columns: readonly ExperimentColumn[];
  out: string;
}): Promise<{
  runs: { arm: string; seed: number; seconds: number; episodes: number; values: Record<string, number> }[];
  seconds: number;
  load: { start: number[]; end: number[]; cores: number };
}> {
  const started = performance.now();
  const load = { start: loadavg(), end: [] as number[], cores: cpus().length };
  const runs: { arm: string; seed: number; seconds: number; episodes: number; values: Record<string, number> }[] = [];
  for (const arm of options.arms) {
    for (const seed of options.seeds) {
      const out = join(options.out, `${arm.id}-${seed}`);
      const result = await train({ config: arm.config(seed), out, baseDir: process.cwd() });
      const metrics = await readMetrics(out);
      const values = Object.fromEntries(options.columns.map((c) => [c.name, c.value({ metrics, last: result.last })]));
      runs.push({ arm: arm.name, seed, seconds: result.seconds, episodes: result.episodes, values });
      const elapsed = (performance.now() - started) / 1000;
      console.error(
        `[${options.name}] ${arm.name} seed ${seed}: ${result.steps} steps, ${result.episodes} episodes in ${result.seconds.toFixed(0)} s (${elapsed.toFixed(0)} s so far, load ${(loadavg()[0] ?? 0).toFixed(1)}); ${Object.entries(
          values,
        )
          .slice(0, 4)
          .map(([k, v]) => `${k} ${v.toFixed(3)}`)
          .join(', ')}`,
      );
    }
  }
  load.end = loadavg();
  return { runs, seconds: (performance.now() - started) / 1000, load };
}

/** Writes `<out>/results.json`. */
export async function writeResults(out: string, results: unknown): Promise<string> {
  await mkdir(out, { recursive: true });
  const path = join(out, 'results.json');
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
