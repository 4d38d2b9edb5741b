import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { selectTasks, type TaskSelection } from '../task/select.ts';
import type { Task } from '../task/task.ts';
import type { Taskset } from '../task/taskset.ts';
import type { Episode } from '../trace/episode.ts';
import { snakeConfigKeys } from '../util/config-keys.ts';
import { turnBudget } from '../util/turn-budget.ts';
import type { PriceTable } from './pricing.ts';
import { compactTracesFile, REJECTED_TRACES_FILE } from './resume-file.ts';
import { type Shard, shardSlice } from './shard.ts';
import { type EvalSummary, formatSummary, summarize } from './summary.ts';
import { EpisodeWriter, readEpisodes } from './traces-file.ts';

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
  /** Which tasks of the taskset to run; `numTasks` caps it. */
  select?: TaskSelection;
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

/** One episode to run: a task and its rollout index. */
interface QueueItem {
  task: Task;
  index: number;
}

/**
 * Runs `rollouts` episodes of each task with at most `concurrency` at once, appending each
 * finished episode to `traces.jsonl` as one line. On resume, complete episodes are kept,
 * torn or failed ones are dropped and re-run, and none is ever duplicated.
 */
export async function runEval(options: RunEvalOptions): Promise<EvalResult> {
  const { env, outDir } = options;
  const log = options.log ?? (() => {});
  const tasks = tasksToRun(options, log);
  mkdirSync(join(outDir, 'logs'), { recursive: true });
  const tracesPath = join(outDir, 'traces.jsonl');
  // A resumed run keeps the config it started with; a new one writes it atomically (a kill
  // mid-write must not leave a torn config that the next --resume cannot read).
  if (options.config && !options.resume)
    writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(snakeConfigKeys(options.config), null, 2)}\n`);
  const kept = options.resume ? keepCompleteEpisodes(env, tracesPath, log) : new Map<string, Episode>();
  const queue = queueOf(options, tasks, kept);
  const finished = await runQueue(options, queue, [...kept.values()], tracesPath, log);
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

/** The tasks the eval covers: the selection (`select`), capped at `numTasks`; all of a finite taskset by default. */
function tasksToRun(options: RunEvalOptions, log: NonNullable<RunEvalOptions['log']>): Task[] {
  const { taskset, numTasks } = options;
  if (numTasks !== undefined && !options.select && numTasks > taskset.size) {
    log(`taskset ${taskset.id} has ${taskset.size} tasks; running all of them (asked for ${numTasks})`);
  }
  return selectTasks(taskset, options.select, numTasks);
}

/**
 * Resume: the complete episodes of `traces.jsonl` by `task#rollout` (the first of duplicates).
 * Failed episodes and duplicates are dropped from the file, so they are run again and never appear
 * twice; lines it cannot read (torn, corrupt, an unknown schema version) are moved to
 * `traces.rejected.jsonl` with the reason, never deleted. The file is streamed (any size) and
 * rewritten by copying the kept lines.
 */
function keepCompleteEpisodes(
  env: EpisodeRunner,
  tracesPath: string,
  log: NonNullable<RunEvalOptions['log']>,
): Map<string, Episode> {
  const kept = new Map<string, Episode>();
  const keptRanges: { start: number; end: number }[] = [];
  const { episodes, ranges, badLines } = readEpisodes(tracesPath);
  for (const bad of badLines)
    log(`resume: moving line ${bad.line} of traces.jsonl to ${REJECTED_TRACES_FILE} (${bad.reason}); its episode will be re-run`);
  let dropped = 0;
  for (const [i, episode] of episodes.entries()) {
    const key = episodeKey(episode.task.key, episode.group.index);
    if (env.isComplete(episode) && !kept.has(key)) {
      kept.set(key, episode);
      keptRanges.push(ranges[i] as { start: number; end: number });
    } else dropped++;
  }
  if (badLines.length || dropped) compactTracesFile({ path: tracesPath, keep: keptRanges, rejected: badLines });
  log(
    `resume: keeping ${kept.size} complete episodes, re-running ${dropped} failed or duplicate and ${badLines.length} unreadable${badLines.length ? ` (kept in ${REJECTED_TRACES_FILE})` : ''}`,
  );
  return kept;
}

/** Tasks × rollouts in order, only this shard's slice, without the episodes kept from a resumed run. */
function queueOf(options: RunEvalOptions, tasks: Task[], kept: Map<string, Episode>): QueueItem[] {
  const rollouts = options.rollouts ?? 1;
  const queue: QueueItem[] = [];
  const inSlice = shardSlice(options, tasks, rollouts);
  let position = 0;
  for (const task of tasks) {
    for (let index = 0; index < rollouts; index++) {
      if (inSlice(position++) && !kept.has(episodeKey(task.key, index))) queue.push({ task, index });
    }
  }
  return queue;
}

/**
 * The signal every episode of the run listens on: `concurrency` listeners on one signal by design
 * (Node warns past 10 as a possible leak). The runner owns that fan-out, so it gives the episodes
 * its own signal, linked to the caller's by one listener, with a limit that matches it — a
 * listener left behind by an episode still trips the warning. `unlink` removes that one listener.
 */
function runSignal(caller: AbortSignal | undefined, concurrency: number): { signal: AbortSignal; unlink: () => void } {
  const controller = new AbortController();
  setMaxListeners(concurrency + 10, controller.signal);
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, unlink: () => caller?.removeEventListener('abort', onAbort) };
}

/**
 * Runs the queue with at most `concurrency` episodes at once, appending each finished episode to
 * `traces.jsonl` and reporting progress; returns `kept` followed by the episodes run, in the order
 * they finished.
 *
 * Starting an episode and writing a finished one are synchronous work that arrives in bursts (a
 * thousand episodes start at once; replies that land in one poll phase finish together). Both go
 * through the process's {@link turnBudget}: past its per-turn budget they wait for a later turn,
 * so the event loop (timers, interception requests, heartbeats) keeps turning under a burst. A
 * start is new work (`admit`): it waits while work of episodes under way waits.
 */
async function runQueue(
  options: RunEvalOptions,
  queue: QueueItem[],
  kept: Episode[],
  tracesPath: string,
  log: NonNullable<RunEvalOptions['log']>,
): Promise<Episode[]> {
  const { env } = options;
  const concurrency = Math.max(1, options.concurrency ?? 32);
  const writer = new EpisodeWriter(tracesPath);
  const ledger = new RunLedger({ kept, total: kept.length + queue.length, writer, log, onProgress: options.onProgress });
  const { signal, unlink } = runSignal(options.signal, concurrency);
  let next = 0;
  const worker = async () => {
    while (next < queue.length && !signal.aborted) {
      await turnBudget.admit();
      if (next >= queue.length || signal.aborted) break;
      const item = queue[next++] as QueueItem;
      const episode = await env.runEpisode({ task: item.task, group: { id: item.task.key, index: item.index }, signal });
      await turnBudget.pass();
      ledger.record(episode, item);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(queue.length, 1)) }, worker));
  } finally {
    unlink();
    writer.close();
  }
  return ledger.finished;
}

/**
 * The run's finished episodes: appends each to `traces.jsonl`, logs failures, keeps the failure
 * count and the live reward mean, and reports progress.
 */
class RunLedger {
  /** Kept episodes first, then the ones run, in the order they finished. */
  readonly finished: Episode[];
  private readonly total: number;
  private readonly writer: EpisodeWriter;
  private readonly log: NonNullable<RunEvalOptions['log']>;
  private readonly onProgress: RunEvalOptions['onProgress'];
  private failed: number;
  private rewardSum = 0;
  private rewardCount = 0;

  constructor(options: {
    kept: Episode[];
    total: number;
    writer: EpisodeWriter;
    log: NonNullable<RunEvalOptions['log']>;
    onProgress: RunEvalOptions['onProgress'];
  }) {
    this.finished = options.kept;
    this.total = options.total;
    this.writer = options.writer;
    this.log = options.log;
    this.onProgress = options.onProgress;
    this.failed = this.finished.filter((e) => !e.ok).length;
    this.report();
  }

  record(episode: Episode, item: QueueItem): void {
    // Too large for one line of the run file: written as a failed stand-in, and failed here too.
    const refused = this.writer.write(episode);
    if (refused) episode.errors.push(refused);
    this.finished.push(episode);
    if (!episode.ok) {
      this.failed++;
      this.log(
        `episode ${episode.id} (task ${item.task.key} #${item.index}) failed: ${[...episode.errors, ...episode.traces.flatMap((t) => t.errors)].map((e) => `${e.type}: ${e.message.slice(0, 200)}`).join(' | ')}`,
      );
    }
    // Live mean over the first scored trace (a frozen user's or judge's trace has no reward).
    const first = episode.traces.find((t) => Object.values(t.rewards).some((r) => r));
    if (first?.ok) {
      this.rewardSum += first.reward;
      this.rewardCount++;
    }
    this.report();
  }

  private report(): void {
    const { finished, total, failed, rewardSum, rewardCount } = this;
    this.onProgress?.({ done: finished.length, total, failed, rewardMean: rewardCount ? rewardSum / rewardCount : null });
  }
}

/** Writes a file through a temporary sibling and a rename, so readers never see half of it. */
export function writeFileAtomic(path: string, text: string): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}
