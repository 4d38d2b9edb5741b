import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../task/task.ts';
import type { Taskset } from '../task/taskset.ts';
import type { Episode } from '../trace/episode.ts';
import type { PriceTable } from './pricing.ts';
import { type Shard, shardSlice } from './shard.ts';
import { type EvalSummary, formatSummary, summarize } from './summary.ts';
import { EpisodeWriter, readEpisodes, rewriteEpisodes } from './traces-file.ts';

/**
 * Progress of an eval, reported after each episode (`onProgress`): episodes done, total, failed, and
 * the mean reward so far.
 */
export interface EvalProgress {
  /** Episodes finished (kept from a resumed run included). */
  done: number;
  /** Episodes the eval runs in all. */
  total: number;
  /** Finished episodes that are not ok. */
  failed: number;
  /** Mean reward of the finished episodes; null before any has a reward. */
  rewardMean: number | null;
}

/** What the eval runner needs of an env (any `Env` fits). */
export interface EpisodeRunner {
  readonly id: string;
  readonly roles: readonly string[];
  runEpisode(options: { task: Task; group: { id: string; index: number }; signal?: AbortSignal }): Promise<Episode>;
  isComplete(episode: Episode): boolean;
}

/**
 * What {@link runEval} takes: the env and taskset, how many tasks × rollouts, concurrency, output
 * directory, resume and sharding.
 */
export interface RunEvalOptions {
  env: EpisodeRunner;
  taskset: Taskset;
  /** Tasks to run (required for an infinite taskset). */
  numTasks?: number;
  /** Episodes per task. */
  rollouts?: number;
  /** Episodes at once. */
  concurrency?: number;
  /** The run directory (created). Reused as is on resume. */
  outDir: string;
  /** Keep complete episodes already in `outDir/traces.jsonl` and run only the rest. */
  resume?: boolean;
  /** The resolved config, written to `config.json` (secrets must already be removed). */
  config?: Record<string, unknown>;
  model: string;
  passThreshold?: number;
  /** Model → price per million tokens: turns usage into cost in the summary (`[prices."<model>"]`). */
  prices?: PriceTable;
  onProgress?: (progress: EvalProgress) => void;
  /** Progress lines; `fileOnly` marks lines meant for the run's log file, not the terminal. */
  log?: (line: string, options?: { fileOnly?: boolean }) => void;
  signal?: AbortSignal;
  /** Run only this deterministic slice of tasks × rollouts (`troupe eval --shard i/n`; merge with `troupe merge`). */
  shard?: Shard;
}

/**
 * What {@link runEval} returns: where the run was written, its summary, and how many episodes ran now
 * versus were kept from an earlier run.
 */
export interface EvalResult {
  /** The run directory (`traces.jsonl`, `summary.json`, …). */
  outDir: string;
  /** Per-role rewards, pass@k, usage and cost of every episode of the run. */
  summary: EvalSummary;
  /** Episodes run in this invocation. */
  ran: number;
  /** Episodes kept from an earlier run (resume). */
  kept: number;
}

/** `outputs/<env>--<model>--<harness>--<8hex>`, with path-unsafe characters replaced. */
export function runDirName(options: { env: string; model: string; harness: string }): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_');
  return `${clean(options.env)}--${clean(options.model)}--${clean(options.harness)}--${randomBytes(4).toString('hex')}`;
}

function episodeKey(taskKey: string, index: number): string {
  return `${taskKey}#${index}`;
}

/**
 * Runs `rollouts` episodes of each task with at most `concurrency` at once, appending each
 * finished episode to `traces.jsonl` as one line. On resume, complete episodes are kept,
 * torn or failed ones are dropped and re-run, and none is ever duplicated.
 */
export async function runEval(options: RunEvalOptions): Promise<EvalResult> {
  const { env, outDir } = options;
  const log = options.log ?? (() => {});
  const rollouts = options.rollouts ?? 1;
  const concurrency = Math.max(1, options.concurrency ?? 32);
  if (options.taskset.isInfinite && options.numTasks === undefined) {
    throw new RangeError(`taskset ${options.taskset.id} is infinite: set numTasks (-n)`);
  }
  if (options.numTasks !== undefined && options.numTasks > options.taskset.size) {
    log(`taskset ${options.taskset.id} has ${options.taskset.size} tasks; running all of them (asked for ${options.numTasks})`);
  }
  const tasks: Task[] = (
    options.numTasks !== undefined ? options.taskset.head(Math.min(options.numTasks, options.taskset.size)) : options.taskset
  ).toArray();
  mkdirSync(join(outDir, 'logs'), { recursive: true });
  const tracesPath = join(outDir, 'traces.jsonl');
  // A resumed run keeps the config it started with; a new one writes it atomically (a kill
  // mid-write must not leave a torn config that the next --resume cannot read).
  if (options.config && !options.resume)
    writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(options.config, null, 2)}\n`);

  const kept = new Map<string, Episode>();
  if (options.resume) {
    const { episodes, badLines } = readEpisodes(tracesPath);
    for (const bad of badLines) log(`resume: dropping line ${bad.line} of traces.jsonl (${bad.reason}); it will be re-run`);
    let dropped = 0;
    for (const episode of episodes) {
      const key = episodeKey(episode.task.key, episode.group.index);
      if (env.isComplete(episode) && !kept.has(key)) kept.set(key, episode);
      else dropped++;
    }
    if (badLines.length || dropped) rewriteEpisodes(tracesPath, [...kept.values()]);
    log(`resume: keeping ${kept.size} complete episodes, re-running ${dropped} failed or duplicate and ${badLines.length} torn`);
  }

  const queue: { task: Task; index: number }[] = [];
  const inSlice = shardSlice(options, tasks, rollouts);
  let position = 0;
  for (const task of tasks) {
    for (let index = 0; index < rollouts; index++) {
      if (inSlice(position++) && !kept.has(episodeKey(task.key, index))) queue.push({ task, index });
    }
  }
  const total = kept.size + queue.length;
  const finished: Episode[] = [...kept.values()];
  const writer = new EpisodeWriter(tracesPath);
  let failed = finished.filter((e) => !e.ok).length;
  let rewardSum = 0;
  let rewardCount = 0;
  let next = 0;
  const report = () =>
    options.onProgress?.({ done: finished.length, total, failed, rewardMean: rewardCount ? rewardSum / rewardCount : null });
  report();
  // Every episode in flight listens on the run's signal: `concurrency` listeners on one signal
  // by design (Node warns past 10 as a possible leak). The runner owns that fan-out, so it gives
  // the episodes its own signal, linked to the caller's by one listener, with a limit that
  // matches it — a listener left behind by an episode still trips the warning.
  const runController = new AbortController();
  setMaxListeners(concurrency + 10, runController.signal);
  const onAbort = () => runController.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  const signal = runController.signal;
  // Ramp up: workers start 32 per event-loop turn (a chain of setImmediate, so I/O and timers run
  // between batches). Starting every episode of a high concurrency in one tick blocks the event
  // loop, and every interception request with it, for seconds.
  let startGate: Promise<void> = Promise.resolve();
  const worker = async (_: unknown, workerIndex: number) => {
    if (workerIndex > 0 && workerIndex % 32 === 0)
      startGate = startGate.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    await startGate;
    while (next < queue.length && !signal.aborted) {
      const item = queue[next++] as { task: Task; index: number };
      const episode = await env.runEpisode({ task: item.task, group: { id: item.task.key, index: item.index }, signal });
      writer.write(episode);
      finished.push(episode);
      if (!episode.ok) {
        failed++;
        log(
          `episode ${episode.id} (task ${item.task.key} #${item.index}) failed: ${[...episode.errors, ...episode.traces.flatMap((t) => t.errors)].map((e) => `${e.type}: ${e.message.slice(0, 200)}`).join(' | ')}`,
        );
      }
      // Live mean over the first scored trace (a frozen user's or judge's trace has no reward).
      const first = episode.traces.find((t) => Object.values(t.rewards).some((r) => r));
      if (first?.ok) {
        rewardSum += first.reward;
        rewardCount++;
      }
      report();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(queue.length, 1)) }, worker));
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    writer.close();
  }
  const summary = summarize({
    episodes: finished,
    env: env.id,
    model: options.model,
    ...(options.passThreshold !== undefined ? { passThreshold: options.passThreshold } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
  });
  writeFileAtomic(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  log(formatSummary(summary), { fileOnly: true });
  return { outDir, summary, ran: finished.length - kept.size, kept: kept.size };
}

/** Writes a file through a temporary sibling and a rename, so readers never see half of it. */
export function writeFileAtomic(path: string, text: string): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}
