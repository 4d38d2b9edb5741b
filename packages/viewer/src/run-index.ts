import type { EpisodeRecord, TraceRecord } from '@troupe/verifiers';
import { passAtK } from '@troupe/verifiers';
import { activeMs, judgeCallsOf, type PriceTable, PriceTableSchema, usageCost } from '@troupe/verifiers/internal';
import { z } from 'zod';
import type { ViewerRun } from './run-directory.ts';

/**
 * The run index: what the page needs up front (summary and one compact row per episode),
 * computed from the traces themselves. Episodes' full records are fetched or parsed only when
 * one is opened.
 */

export const HistogramSchema = z.object({
  min: z.number(),
  max: z.number(),
  /** Equal-width bins over [min, max]; the last bin includes max. */
  counts: z.array(z.number().int().nonnegative()),
});
export type Histogram = z.infer<typeof HistogramSchema>;

export const TokenTotalsSchema = z.object({
  prompt: z.number(),
  completion: z.number(),
  cached: z.number(),
  reasoning: z.number(),
  /**
   * USD: the provider's `usage.cost` where it reported one, else the run's `[prices]` table
   * (config.json) for the call's model — the same rule as summary.json; unknown costs add nothing.
   */
  cost: z.number(),
  /** Calls with a known cost (reported or priced). */
  costedCalls: z.number().int(),
  /** The part of `cost` spent by single-call judges scoring the traces (`trace.extraUsage`). */
  judgeCost: z.number(),
});
export type TokenTotals = z.infer<typeof TokenTotalsSchema>;

export const ViewerRoleSummarySchema = z.object({
  name: z.string(),
  trainable: z.boolean(),
  models: z.array(z.string()),
  harnesses: z.array(z.string()),
  traces: z.number().int(),
  /** Traces with ok=false; their rewards are left out of the statistics (a failure is not a 0). */
  errored: z.number().int(),
  /** Number of rewards the statistics are over (ok traces with at least one reward). */
  scored: z.number().int(),
  rewardMean: z.number().nullable(),
  rewardStd: z.number().nullable(),
  rewardMin: z.number().nullable(),
  rewardMax: z.number().nullable(),
  histogram: HistogramSchema.nullable(),
  /** Mean score (and weight) of each named reward. */
  rewardParts: z.array(z.object({ name: z.string(), mean: z.number(), weight: z.number(), n: z.number().int() })),
  /** Mean of each metric over the traces that recorded it. */
  metrics: z.array(z.object({ name: z.string(), mean: z.number(), n: z.number().int() })),
  /**
   * pass@k over tasks (a trace passes when its reward is 1), present when every reward of the role
   * lies in [0, 1]. Averaged over the tasks with at least k scored traces.
   */
  passAtK: z.array(z.object({ k: z.number().int(), value: z.number(), tasks: z.number().int() })),
  turnsMean: z.number().nullable(),
  tokens: TokenTotalsSchema,
  stopConditions: z.record(z.string(), z.number().int()),
});
export type ViewerRoleSummary = z.infer<typeof ViewerRoleSummarySchema>;

export const EpisodeRowSchema = z.object({
  /** Position in traces.jsonl (0-based, after skipped lines). */
  i: z.number().int(),
  id: z.string(),
  env: z.string(),
  task: z.string(),
  group: z.number().int(),
  attempt: z.number().int(),
  ok: z.boolean(),
  /** Error types of the episode and its traces, de-duplicated. */
  errors: z.array(z.string()),
  /** Mean reward per role (null when no trace of the role was scored). */
  rewards: z.record(z.string(), z.number().nullable()),
  turns: z.number().int(),
  tokens: z.number(),
  cost: z.number(),
  durationMs: z.number().nullable(),
  stops: z.array(z.string()),
  /**
   * Lower-case text the free-text filter searches besides the row's own fields (id, env, task,
   * roles, error types): the group id, the start of the task data and the error messages.
   */
  text: z.string(),
});
export type EpisodeRow = z.infer<typeof EpisodeRowSchema>;

export const ErrorSummarySchema = z.object({
  type: z.string(),
  count: z.number().int(),
  stages: z.record(z.string(), z.number().int()),
  example: z.string(),
});

export const ViewerIndexSchema = z.object({
  version: z.literal(1),
  run: z.object({
    name: z.string(),
    config: z.unknown(),
    summary: z.unknown(),
    warnings: z.array(z.string()),
    envs: z.array(z.string()),
  }),
  totals: z.object({
    episodes: z.number().int(),
    okEpisodes: z.number().int(),
    traces: z.number().int(),
    tasks: z.number().int(),
    calls: z.number().int(),
    failedCalls: z.number().int(),
    tokens: TokenTotalsSchema,
    /** Time during which at least one episode ran (union of episode intervals: a resume's idle gap is not counted). */
    wallMs: z.number().nullable(),
    episodeMsMean: z.number().nullable(),
  }),
  roles: z.array(ViewerRoleSummarySchema),
  errors: z.array(ErrorSummarySchema),
  stopConditions: z.record(z.string(), z.number().int()),
  episodes: z.array(EpisodeRowSchema),
});
export type ViewerIndex = z.infer<typeof ViewerIndexSchema>;

const HISTOGRAM_BINS = 12;

function emptyTokens(): TokenTotals {
  return { prompt: 0, completion: 0, cached: 0, reasoning: 0, cost: 0, costedCalls: 0, judgeCost: 0 };
}

function addTraceTokens(into: TokenTotals, trace: TraceRecord, prices: PriceTable | undefined): number {
  let total = 0;
  const count = (usage: TraceRecord['extraUsage'][number]) => {
    into.prompt += usage.promptTokens;
    into.completion += usage.completionTokens;
    into.cached += usage.cachedInputTokens ?? 0;
    into.reasoning += usage.reasoningTokens ?? 0;
    total += usage.promptTokens + usage.completionTokens + (usage.cachedInputTokens ?? 0);
  };
  const addCost = (cost: number | undefined, judge: boolean) => {
    if (cost === undefined) return;
    into.cost += cost;
    into.costedCalls++;
    if (judge) into.judgeCost += cost;
  };
  for (const call of trace.calls) {
    if (!call.usage) continue;
    count(call.usage);
    addCost(usageCost(call.usage, call.model, prices), false);
  }
  // Single-call judges: their usage is in `extraUsage`, their model beside it in `info.judgeCalls`.
  for (const usage of trace.extraUsage) count(usage);
  const judged = judgeCallsOf(trace).flatMap((call) => (call.usage ? [{ usage: call.usage, model: call.model }] : []));
  if (judged.length) for (const call of judged) addCost(usageCost(call.usage, call.model, prices), true);
  else for (const usage of trace.extraUsage) addCost(usage.cost, true);
  return total;
}

function mergeTokens(into: TokenTotals, from: TokenTotals): void {
  into.prompt += from.prompt;
  into.completion += from.completion;
  into.cached += from.cached;
  into.reasoning += from.reasoning;
  into.cost += from.cost;
  into.costedCalls += from.costedCalls;
  into.judgeCost += from.judgeCost;
}

/** Σ score·weight over the non-null rewards; null when the trace has none. */
export function traceReward(trace: TraceRecord): number | null {
  let total = 0;
  let any = false;
  for (const reward of Object.values(trace.rewards)) {
    if (!reward) continue;
    total += reward.score * reward.weight;
    any = true;
  }
  return any ? total : null;
}

function numTurns(trace: TraceRecord): number {
  let n = 0;
  for (const node of trace.nodes) if (node.sampled) n++;
  return n;
}

function minOf(values: number[]): number {
  let m = Number.POSITIVE_INFINITY;
  for (const v of values) if (v < m) m = v;
  return m;
}

function maxOf(values: number[]): number {
  let m = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > m) m = v;
  return m;
}

/** Equal-width histogram of `values` (null when there are none). */
export function histogram(values: number[], bins = HISTOGRAM_BINS): Histogram | null {
  if (values.length === 0) return null;
  let min = minOf(values);
  let max = maxOf(values);
  if (min >= 0 && max <= 1) {
    min = 0;
    max = 1;
  } else if (min === max) {
    min -= 0.5;
    max += 0.5;
  }
  const counts = new Array<number>(bins).fill(0);
  const width = (max - min) / bins;
  for (const v of values) counts[Math.min(bins - 1, Math.floor((v - min) / width))]!++;
  return { min, max, counts };
}

interface RoleAccumulator {
  name: string;
  trainable: boolean;
  models: Set<string>;
  harnesses: Set<string>;
  traces: number;
  errored: number;
  rewards: number[];
  parts: Map<string, { sum: number; weight: number; n: number }>;
  metrics: Map<string, { sum: number; n: number }>;
  /** task key -> [scored, passed] */
  tasks: Map<string, [number, number]>;
  turns: number;
  tokens: TokenTotals;
  stops: Map<string, number>;
}

function count<K>(map: Map<K, number>, key: K): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** The accumulator of a trace's role, made (and kept in `roles`) at the role's first trace. */
function roleOf(roles: Map<string, RoleAccumulator>, trace: TraceRecord): RoleAccumulator {
  let role = roles.get(trace.agent.name);
  if (!role) {
    role = {
      name: trace.agent.name,
      trainable: trace.agent.trainable,
      models: new Set(),
      harnesses: new Set(),
      traces: 0,
      errored: 0,
      rewards: [],
      parts: new Map(),
      metrics: new Map(),
      tasks: new Map(),
      turns: 0,
      tokens: emptyTokens(),
      stops: new Map(),
    };
    roles.set(trace.agent.name, role);
  }
  return role;
}

/** Adds a trace's finite metrics to its role's sums. */
function addMetrics(role: RoleAccumulator, trace: TraceRecord): void {
  for (const [metric, value] of Object.entries(trace.metrics)) {
    if (value === null || !Number.isFinite(value)) continue;
    const m = role.metrics.get(metric) ?? { sum: 0, n: 0 };
    m.sum += value;
    m.n++;
    role.metrics.set(metric, m);
  }
}

/** Adds a scored trace to its role: the reward, each reward part, and the task's scored and passed counts. */
function addScoredTrace(role: RoleAccumulator, trace: TraceRecord, reward: number, taskKey: string): void {
  role.rewards.push(reward);
  for (const [part, r] of Object.entries(trace.rewards)) {
    if (!r) continue;
    const p = role.parts.get(part) ?? { sum: 0, weight: r.weight, n: 0 };
    p.sum += r.score;
    p.n++;
    role.parts.set(part, p);
  }
  const task = role.tasks.get(taskKey) ?? [0, 0];
  task[0]++;
  if (reward >= 1 - 1e-9) task[1]++;
  role.tasks.set(taskKey, task);
}

/**
 * Counts a trace on its role (models, harnesses, turns, tokens), on the episode's `usage` (turns,
 * tokens, cost) and on the run's call totals.
 */
function addUsage(
  into: {
    role: RoleAccumulator;
    usage: { turns: number; tokens: number; cost: number };
    totals: ViewerIndex['totals'];
    prices: PriceTable | undefined;
  },
  trace: TraceRecord,
): void {
  const { role, usage, totals, prices } = into;
  role.traces++;
  if (trace.agent.model) role.models.add(trace.agent.model);
  if (trace.agent.harness) role.harnesses.add(trace.agent.harness);
  const traceTurns = numTurns(trace);
  role.turns += traceTurns;
  usage.turns += traceTurns;
  const tokenTotals = emptyTokens();
  usage.tokens += addTraceTokens(tokenTotals, trace, prices);
  usage.cost += tokenTotals.cost;
  mergeTokens(role.tokens, tokenTotals);
  totals.calls += trace.calls.length;
  totals.failedCalls += trace.calls.filter((c) => c.error).length;
}

/** The mean of `values` (null when there are none). */
function meanOrNull(values: number[] | undefined): number | null {
  return values?.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

function episodeRow(
  i: number,
  episode: EpisodeRecord,
  roles: Map<string, RoleAccumulator>,
  errors: Map<string, { count: number; stages: Map<string, number>; example: string }>,
  stops: Map<string, number>,
  totals: ViewerIndex['totals'],
  prices: PriceTable | undefined,
): EpisodeRow {
  const errorTypes = new Set<string>();
  const errorText: string[] = [];
  const noteError = (error: { type: string; message: string; stage?: string | undefined }) => {
    errorTypes.add(error.type);
    errorText.push(error.type, error.message);
    let entry = errors.get(error.type);
    if (!entry) errors.set(error.type, (entry = { count: 0, stages: new Map(), example: error.message }));
    entry.count++;
    count(entry.stages, error.stage ?? 'unknown');
  };
  for (const error of episode.errors) noteError(error);
  const roleRewards = new Map<string, number[]>();
  const episodeStops = new Set<string>();
  const usage = { turns: 0, tokens: 0, cost: 0 };
  for (const trace of episode.traces) {
    const name = trace.agent.name;
    const role = roleOf(roles, trace);
    for (const error of trace.errors) noteError(error);
    addUsage({ role, usage, totals, prices }, trace);
    const stop = trace.stopCondition ?? 'none';
    count(role.stops, stop);
    count(stops, stop);
    episodeStops.add(stop);
    addMetrics(role, trace);
    const reward = traceReward(trace);
    if (!trace.ok) {
      role.errored++;
      continue;
    }
    if (reward === null) continue;
    addScoredTrace(role, trace, reward, episode.task.key);
    (roleRewards.get(name) ?? roleRewards.set(name, []).get(name)!).push(reward);
  }
  const rewards: Record<string, number | null> = {};
  for (const trace of episode.traces) rewards[trace.agent.name] = meanOrNull(roleRewards.get(trace.agent.name));
  const taskText = JSON.stringify(episode.task.data).slice(0, 200);
  return {
    i,
    id: episode.id,
    env: episode.env.id,
    task: episode.task.key,
    group: episode.group.index,
    attempt: episode.attempt,
    ok: episode.ok,
    errors: [...errorTypes],
    rewards,
    ...usage,
    durationMs: episode.endedAt === null ? null : episode.endedAt - episode.startedAt,
    stops: [...episodeStops],
    text: [episode.group.id, taskText, ...errorText].join(' ').toLowerCase(),
  };
}

function roleSummary(role: RoleAccumulator): ViewerRoleSummary {
  const n = role.rewards.length;
  const mean = n ? role.rewards.reduce((a, b) => a + b, 0) / n : null;
  const std = n && mean !== null ? Math.sqrt(role.rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / n) : null;
  const binary = n > 0 && role.rewards.every((r) => r >= -1e-9 && r <= 1 + 1e-9);
  const pass: ViewerRoleSummary['passAtK'] = [];
  if (binary) {
    const maxN = maxOf([...role.tasks.values()].map(([scored]) => scored));
    for (let k = 1; k <= maxN; k *= 2) {
      let sum = 0;
      let tasks = 0;
      for (const [scored, passed] of role.tasks.values()) {
        if (scored < k) continue;
        sum += passAtK(scored, passed, k);
        tasks++;
      }
      if (tasks) pass.push({ k, value: sum / tasks, tasks });
    }
  }
  return {
    name: role.name,
    trainable: role.trainable,
    models: [...role.models],
    harnesses: [...role.harnesses],
    traces: role.traces,
    errored: role.errored,
    scored: n,
    rewardMean: mean,
    rewardStd: std,
    rewardMin: n ? minOf(role.rewards) : null,
    rewardMax: n ? maxOf(role.rewards) : null,
    histogram: histogram(role.rewards),
    rewardParts: [...role.parts].map(([name, p]) => ({ name, mean: p.sum / p.n, weight: p.weight, n: p.n })),
    metrics: [...role.metrics].map(([name, m]) => ({ name, mean: m.sum / m.n, n: m.n })),
    passAtK: pass,
    turnsMean: role.traces ? role.turns / role.traces : null,
    tokens: role.tokens,
    stopConditions: Object.fromEntries(role.stops),
  };
}

/** Computes the run index (summary + one row per episode) from a loaded run. */
export function buildRunIndex(run: ViewerRun): ViewerIndex {
  const warnings = [...run.warnings];
  // The run's price table (config.json `prices`), as `troupe eval` used it for summary.json.
  const table = (run.config as { prices?: unknown } | null)?.prices;
  const parsedPrices = table === undefined ? undefined : PriceTableSchema.safeParse(table);
  if (parsedPrices && !parsedPrices.success)
    warnings.push(
      `config.json prices: ${parsedPrices.error.issues[0]?.message ?? 'invalid'}; costs are the provider-reported ones only`,
    );
  const prices = parsedPrices?.success ? parsedPrices.data : undefined;
  const roles = new Map<string, RoleAccumulator>();
  const errors = new Map<string, { count: number; stages: Map<string, number>; example: string }>();
  const stops = new Map<string, number>();
  const totals: ViewerIndex['totals'] = {
    episodes: run.episodes.length,
    okEpisodes: 0,
    traces: 0,
    tasks: 0,
    calls: 0,
    failedCalls: 0,
    tokens: emptyTokens(),
    wallMs: null,
    episodeMsMean: null,
  };
  const rows: EpisodeRow[] = [];
  const tasks = new Set<string>();
  const envs = new Set<string>();
  const intervals: { start: number; end: number | null }[] = [];
  let durationSum = 0;
  let durationN = 0;
  run.episodes.forEach(({ record }, i) => {
    rows.push(episodeRow(i, record, roles, errors, stops, totals, prices));
    if (record.ok) totals.okEpisodes++;
    totals.traces += record.traces.length;
    tasks.add(record.task.key);
    envs.add(record.env.id);
    intervals.push({ start: record.startedAt, end: record.endedAt });
    if (record.endedAt !== null) {
      durationSum += record.endedAt - record.startedAt;
      durationN++;
    }
  });
  for (const role of roles.values()) mergeTokens(totals.tokens, role.tokens);
  totals.tasks = tasks.size;
  totals.wallMs = durationN ? activeMs(intervals) : null;
  totals.episodeMsMean = durationN ? durationSum / durationN : null;
  return {
    version: 1,
    run: { name: run.name, config: run.config, summary: run.summary, warnings, envs: [...envs] },
    totals,
    roles: [...roles.values()].map(roleSummary),
    errors: [...errors]
      .map(([type, e]) => ({ type, count: e.count, stages: Object.fromEntries(e.stages), example: e.example }))
      .sort((a, b) => b.count - a.count),
    stopConditions: Object.fromEntries(stops),
    episodes: rows,
  };
}
