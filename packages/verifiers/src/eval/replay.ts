import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { deepMerge } from '../agent/agent-config.ts';
import { loadPluggedScorers, type PluggedScorers, withPluggedScorers } from '../env/reward-modules.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import type { ModelClient } from '../model/model-client.ts';
import { scoreTrace } from '../task/scoring.ts';
import { Task } from '../task/task.ts';
import { Episode } from '../trace/episode.ts';
import { readRunFileText } from '../trace/run-file.ts';
import { Trace } from '../trace/trace.ts';
import { assertSavedModulesPassedAgain, rejectPrototypeKeys } from '../util/config-keys.ts';
import { writeFileAtomic } from './eval-runner.ts';
import { judgeCallsOf, type PriceTable } from './pricing.ts';
import { type EvalSummary, summarize } from './summary.ts';
import { readEpisodes, rewriteEpisodes } from './traces-file.ts';

/** Per criterion (a reward or metric name): how the rescores of the replayed traces came out. */
export interface CriterionRescore {
  /** Traces where every rescore gave a value. */
  traces: number;
  /** Mean over traces of the mean over rescores. */
  mean: number | null;
  /** Mean over traces of the standard deviation across rescores (0 = the judge never wavered). */
  spread: number | null;
  /** Fraction of traces whose rescores all agree (null with one rescore). */
  agreement: number | null;
  /** Traces where a rescore failed (the value is null in that rescore). */
  failed: number;
}

/** What `troupe replay` reports beside the usual summary. */
export interface ReplayReport {
  source: string;
  numRescores: number;
  /** Traces re-scored (ok traces of roles with rewards or metrics); the others are copied as they were. */
  rescored: number;
  copied: number;
  criteria: Record<string, CriterionRescore>;
}

/** Options of `replayRun`. */
export interface ReplayOptions {
  /** The run directory whose `traces.jsonl` and `config.json` are re-scored. */
  sourceDir: string;
  /** The new run directory (default `<parent of source>/<source name>--replay-<8 hex>`). */
  outDir?: string;
  /** Replaces an existing `outDir`. */
  clean?: boolean;
  /** A config deep-merged over the source's `config.json` (`[[env.<role>.rewards]]` replace the saved lists). */
  config?: Record<string, unknown>;
  /** Run every reward and judge K times per trace (default 1). */
  numRescores?: number;
  /** The client and model judge entries call (the run's, unless an entry names another model). */
  client: ModelClient;
  model: string;
  /** The taskset's tasks by key: their own rewards and metrics score trainable traces again. */
  tasks?: Map<string, Task>;
  /** Where relative reward module paths start. */
  baseDir?: string;
  prices?: PriceTable;
  passThreshold?: number;
}

/** The result of a replay: the new run directory, its summary and the rescore report. */
export interface ReplayResult {
  outDir: string;
  summary: EvalSummary & { replay: ReplayReport };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function std(values: number[]): number {
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
}

/** The saved trace with this role's scorer names removed, its scoring errors and old judge calls dropped. */
function unscored(original: Trace, names: Set<string>): Trace {
  const trace = Trace.fromJSON(JSON.parse(JSON.stringify(original.toJSON())));
  for (const name of Object.keys(trace.rewards))
    if (names.has(name) || [...names].some((n) => name.startsWith(`${n}/`))) delete trace.rewards[name];
  for (const name of Object.keys(trace.metrics))
    if (names.has(name) || [...names].some((n) => name.startsWith(`${n}/`))) delete trace.metrics[name];
  const oldJudgeUsage = new Set(judgeCallsOf(trace).map((c) => JSON.stringify(c.usage)));
  trace.extraUsage = trace.extraUsage.filter((u) => !oldJudgeUsage.has(JSON.stringify(u)));
  delete trace.info.judgeCalls;
  trace.errors = trace.errors.filter((e) => e.stage !== 'scoring');
  trace.ok = trace.errors.length === 0;
  return trace;
}

/** The episode's record without its traces (which the replay adds, re-scored or copied). */
function emptyCopy(episode: Episode): Episode {
  const copy = new Episode({ id: episode.id, env: episode.env, task: episode.task, group: episode.group });
  copy.errors = episode.errors;
  copy.startedAt = episode.startedAt;
  copy.endedAt = episode.endedAt;
  copy.attempt = episode.attempt;
  return copy;
}

/** The task a saved trace is re-scored with: a trainable role's taskset task when given (its own scorers), else one rebuilt from the saved data. */
function taskOf(trace: Trace, tasks: ReplayOptions['tasks']): Task {
  const given = trace.agent.trainable ? tasks?.get(trace.task.key) : undefined;
  return given ?? new Task(trace.task.data as never, { key: trace.task.key });
}

/** Each role's scorers plugged from the source config (`[[env.<role>.rewards]]`, judges, metrics). */
async function pluggedScorersOf(
  roles: Set<string>,
  envConfig: Record<string, unknown>,
  options: ReplayOptions,
): Promise<Map<string, PluggedScorers | undefined>> {
  const plugged = new Map<string, PluggedScorers | undefined>();
  for (const role of roles) {
    const roleConfig = (envConfig[role] ?? {}) as { rewards?: unknown; metrics?: unknown; model?: string };
    plugged.set(
      role,
      await loadPluggedScorers({ rewards: roleConfig.rewards, metrics: roleConfig.metrics }, `env.${role}`, {
        client: options.client,
        model: options.model,
        ...(options.baseDir ? { baseDir: options.baseDir } : {}),
      }),
    );
  }
  return plugged;
}

/** The new run directory (`outDir`, default beside the source): never the source; an existing one is replaced only with `clean`. */
function freshOutDir(sourceDir: string, options: ReplayOptions): string {
  const outDir = resolve(
    options.outDir ?? join(dirname(sourceDir), `${basename(sourceDir)}--replay-${randomBytes(4).toString('hex')}`),
  );
  if (outDir === sourceDir) throw new ConfigError('replay: the new run directory must not be the source');
  if (existsSync(outDir)) {
    if (!options.clean) throw new ConfigError(`replay: ${outDir} exists (--clean replaces it)`);
    rmSync(outDir, { recursive: true, force: true });
  }
  return outDir;
}

/**
 * Scores an unscored copy of `original` `numRescores` times. The first rescore is the result: each
 * reward and metric is its mean over the rescores (null when a rescore lacks it), and it carries
 * every rescore's scoring errors, judge calls and judge usage. `perName` lists each criterion's
 * scores, one per rescore.
 */
async function rescoreTrace(options: {
  original: Trace;
  task: Task;
  names: Set<string>;
  numRescores: number;
}): Promise<{ final: Trace; perName: Record<string, (number | null)[]> }> {
  const { task } = options;
  const rescores: Trace[] = [];
  const judgeUsage: Trace['extraUsage'][] = [];
  for (let k = 0; k < options.numRescores; k++) {
    const trace = unscored(options.original, options.names);
    const before = trace.extraUsage.length;
    await scoreTrace({ task, trace });
    rescores.push(trace);
    judgeUsage.push(trace.extraUsage.slice(before));
  }
  const final = rescores[0] as Trace;
  const rewardNames = new Set(rescores.flatMap((t) => Object.keys(t.rewards)));
  const metricNames = new Set(rescores.flatMap((t) => Object.keys(t.metrics)));
  const perName: Record<string, (number | null)[]> = {};
  for (const name of rewardNames) {
    const scores = rescores.map((t) => t.rewards[name]?.score ?? null);
    perName[name] = scores;
    const present = scores.filter((s): s is number => s !== null);
    const weight = rescores.find((t) => t.rewards[name])?.rewards[name]?.weight ?? 1;
    final.rewards[name] = present.length === scores.length ? { score: mean(present), weight } : null;
  }
  for (const name of metricNames) {
    const scores = rescores.map((t) => t.metrics[name] ?? null);
    perName[name] = scores;
    final.metrics[name] = scores.every((s) => s !== null) ? mean(scores as number[]) : null;
  }
  for (const [k, other] of rescores.entries()) {
    if (k === 0) continue;
    final.errors.push(...other.errors.filter((e) => e.stage === 'scoring'));
    ((final.info.judgeCalls ??= []) as unknown[]).push(...judgeCallsOf(other));
    final.extraUsage.push(...(judgeUsage[k] ?? []));
  }
  if (final.errors.length) final.ok = false;
  return { final, perName };
}

/** One criterion's line of the report, over the traces whose every rescore scored it. */
function criterionReport(perTrace: (number | null)[][], numRescores: number): ReplayReport['criteria'][string] {
  const complete = perTrace.filter((scores) => scores.every((s) => s !== null)) as number[][];
  return {
    traces: complete.length,
    mean: complete.length ? mean(complete.map(mean)) : null,
    spread: complete.length ? mean(complete.map(std)) : null,
    agreement:
      numRescores > 1 && complete.length
        ? complete.filter((scores) => scores.every((s) => s === scores[0])).length / complete.length
        : null,
    failed: perTrace.length - complete.length,
  };
}

/**
 * Re-scores a finished run's saved traces without re-running any agent: each role's rewards and
 * metrics (the taskset's own, plus `[[env.<role>.rewards]]` / judges from the source config, or
 * replaced / added by `config`) run `numRescores` times per trace. The recorded reward is the
 * mean over rescores; the report gives per criterion the mean, the spread and the agreement
 * between rescores. Writes a new run directory (config.json naming its source, traces.jsonl,
 * summary.json); the source is never modified.
 */
export async function replayRun(options: ReplayOptions): Promise<ReplayResult> {
  const source = readSource(options);
  const { sourceDir, numRescores, envConfig, episodes } = source;
  const roles = new Set(episodes.flatMap((e) => e.traces.map((t) => t.agent.name)));
  const plugged = await pluggedScorersOf(roles, envConfig, options);
  const outDir = freshOutDir(sourceDir, options);
  const { out, report } = await rescoreEpisodes({ episodes, plugged, tasks: options.tasks, sourceDir, numRescores });

  mkdirSync(join(outDir, 'logs'), { recursive: true });
  const replayConfig = { ...source.configWithoutReplay, replay: { source: sourceDir, numRescores } };
  writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(replayConfig, null, 2)}\n`);
  rewriteEpisodes(join(outDir, 'traces.jsonl'), out);
  const summary = {
    ...summarize({
      episodes: out,
      env: typeof envConfig.id === 'string' ? envConfig.id : 'unknown',
      model: typeof source.config.model === 'string' ? source.config.model : options.model,
      ...(options.passThreshold !== undefined ? { passThreshold: options.passThreshold } : {}),
      ...(options.prices ? { prices: options.prices } : {}),
    }),
    replay: report,
  };
  writeFileAtomic(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  return { outDir, summary };
}

/**
 * The source run: its episodes (refused when a line is invalid) and its `config.json` with
 * `options.config` merged over it, without the `replay` table of an earlier replay.
 */
function readSource(options: ReplayOptions) {
  const sourceDir = resolve(options.sourceDir);
  const tracesPath = join(sourceDir, 'traces.jsonl');
  if (!existsSync(tracesPath))
    throw new ConfigError(`replay ${options.sourceDir}: no traces.jsonl there (is it a run directory?)`);
  const numRescores = options.numRescores ?? 1;
  if (!Number.isInteger(numRescores) || numRescores < 1)
    throw new ConfigError(`--num-rescores must be a positive integer, got ${numRescores}`);
  const savedConfigPath = join(sourceDir, 'config.json');
  const saved = existsSync(savedConfigPath)
    ? (JSON.parse(readRunFileText(savedConfigPath) ?? '{}') as Record<string, unknown>)
    : {};
  rejectPrototypeKeys(saved, savedConfigPath);
  // Modules come from the config passed now (--config), never from the run directory's config.json.
  assertSavedModulesPassedAgain({ saved, passed: options.config ?? {}, command: `replay ${options.sourceDir}` });
  const config = deepMerge(saved, options.config ?? {}) as Record<string, unknown>;
  const { replay: _previous, ...configWithoutReplay } = config;
  const envConfig = (configWithoutReplay.env ?? {}) as Record<string, unknown>;
  const { episodes, badLines } = readEpisodes(tracesPath);
  if (badLines.length)
    throw new ConfigError(
      `replay ${options.sourceDir}: traces.jsonl line ${badLines[0]?.line} is invalid: ${badLines[0]?.reason}`,
    );
  return { sourceDir, numRescores, config, configWithoutReplay, envConfig, episodes };
}

/**
 * Every episode with its traces re-scored (ok traces of roles with scorers) or copied (the rest),
 * and the report of how the rescores came out per criterion.
 */
async function rescoreEpisodes(options: {
  episodes: Episode[];
  plugged: Map<string, PluggedScorers | undefined>;
  tasks: ReplayOptions['tasks'];
  sourceDir: string;
  numRescores: number;
}): Promise<{ out: Episode[]; report: ReplayReport }> {
  const { sourceDir, numRescores } = options;
  /** Criterion -> its scores per rescored trace, one per rescore. */
  const values = new Map<string, (number | null)[][]>();
  const report: ReplayReport = { source: sourceDir, numRescores, rescored: 0, copied: 0, criteria: {} };
  const out: Episode[] = [];
  for (const episode of options.episodes) {
    const replayed = emptyCopy(episode);
    for (const original of episode.traces) {
      const task = withPluggedScorers(taskOf(original, options.tasks), options.plugged.get(original.agent.name));
      const names = new Set([...task.rewards.map((r) => r.name), ...task.metrics.map((m) => m.name)]);
      const agentFailed = original.errors.some((e) => e.stage !== 'scoring');
      if (names.size === 0 || agentFailed) {
        replayed.traces.push(original);
        report.copied++;
        continue;
      }
      report.rescored++;
      const { final, perName } = await rescoreTrace({ original, task, names, numRescores });
      for (const [name, scores] of Object.entries(perName)) (values.get(name) ?? values.set(name, []).get(name)!).push(scores);
      final.info.replay = { source: sourceDir, rescores: perName };
      replayed.traces.push(final);
    }
    out.push(replayed);
  }
  for (const [name, perTrace] of values) report.criteria[name] = criterionReport(perTrace, numRescores);
  return { out, report };
}

/** A terminal report of the rescores: one line per criterion. */
export function formatReplayReport(report: ReplayReport): string {
  const lines = [
    `replayed ${report.source}: ${report.rescored} traces re-scored ${report.numRescores}× (${report.copied} copied unchanged)`,
  ];
  for (const [name, c] of Object.entries(report.criteria)) {
    const agreement = c.agreement === null ? '' : `  agreement ${(c.agreement * 100).toFixed(0)}%`;
    lines.push(
      `  ${name}: mean ${c.mean?.toFixed(3) ?? 'n/a'}  spread ${c.spread?.toFixed(3) ?? 'n/a'}${agreement} over ${c.traces} traces${c.failed ? `, ${c.failed} failed` : ''}`,
    );
  }
  return lines.join('\n');
}
