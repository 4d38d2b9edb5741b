import { ConfigError } from '../errors/troupe-error.ts';
import type { Episode } from '../trace/episode.ts';
import { type CostSplit, type PriceTable, runCost } from './pricing.ts';

/** Unbiased pass@k estimate from n samples with c passes: 1 − C(n−c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new ConfigError(`pass@${k} needs at least ${k} samples, got ${n}`, { path: 'k' });
  if (n - c < k) return 1;
  let ratio = 1;
  for (let i = n - c + 1; i <= n; i++) ratio *= 1 - k / i;
  return 1 - ratio;
}

/** One role's results in a run. A role none of whose traces carries a reward is "not scored". */
export interface RoleSummary {
  traces: number;
  ok: number;
  /** Whether the role's traces reach the trainer (judges, simulated users, frozen opponents: false). */
  trainable: boolean;
  /**
   * Ok traces carrying at least one non-null reward. 0 means the role is not scored (a frozen
   * judge or user): its reward fields are null and it has no pass@k, never a mean of 0.
   */
  scored: number;
  rewardMean: number | null;
  rewardStd: number | null;
  rewardMin: number | null;
  rewardMax: number | null;
  /** Reward histogram over 10 equal bins between min and max. */
  histogram: { from: number; to: number; count: number }[];
  /**
   * pass@k over this role's traces per task (reward ≥ threshold counts as a pass; failed traces
   * are misses); `{}` when the role is not scored or its rewards leave [0, 1] (a zero-sum game's payoffs).
   */
  passAtK: Record<string, number>;
}

/**
 * The `summary.json` of an eval run: episode counts, per-role reward statistics and pass@k, usage,
 * cost in USD and timing.
 */
export interface EvalSummary {
  env: string;
  model: string;
  episodes: number;
  episodesOk: number;
  episodesFailed: number;
  /**
   * The role `rewardMean` and `passAtK` describe: the one asked for, else the only scored role;
   * null when several roles are scored (then read `byRole`, where every role has its own).
   */
  primaryRole: string | null;
  /** Mean reward of the primary role's traces. */
  rewardMean: number | null;
  byRole: Record<string, RoleSummary>;
  /** pass@k of the primary role (`{}` when there is none; per role in `byRole`). */
  passAtK: Record<string, number>;
  passThreshold: number;
  tokens: { prompt: number; completion: number; total: number; perEpisode: number };
  /** USD of every call (agents' and judges'); null when no call has a known cost. */
  cost: number | null;
  /** USD per role: the role's own calls (`agent`) and the single-call judges scoring it (`judge`), apart. */
  costByRole: Record<string, CostSplit>;
  /** USD of all single-call judge calls (`rubricJudge`, `referenceJudge`); null when none is priced. */
  judgeCost: number | null;
  errorsByType: Record<string, number>;
  stopConditions: Record<string, number>;
  /**
   * Seconds during which at least one episode was running (the union of the episodes'
   * start–end intervals): a resumed run adds its time, not the idle gap before the resume.
   */
  wallSeconds: number;
}

/** Milliseconds covered by the union of `[start, end]` intervals (open intervals are skipped). */
export function activeMs(intervals: { start: number; end: number | null }[]): number {
  const closed = intervals
    .filter((i): i is { start: number; end: number } => i.end !== null && i.end >= i.start)
    .sort((a, b) => a.start - b.start);
  let total = 0;
  let from = Number.NEGATIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const { start, end } of closed) {
    if (start > to) {
      if (to > from) total += to - from;
      from = start;
      to = end;
    } else if (end > to) to = end;
  }
  if (to > from) total += to - from;
  return total;
}

function stats(values: number[]) {
  if (!values.length) return { mean: null, std: null, min: null, max: null };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance), min: Math.min(...values), max: Math.max(...values) };
}

function histogram(values: number[], min: number | null, max: number | null): RoleSummary['histogram'] {
  if (min === null || max === null) return [];
  const bins = 10;
  const width = max > min ? (max - min) / bins : 1;
  const out = Array.from({ length: max > min ? bins : 1 }, (_, i) => ({
    from: min + i * width,
    to: min + (i + 1) * width,
    count: 0,
  }));
  for (const v of values) {
    const index = max > min ? Math.min(bins - 1, Math.floor((v - min) / width)) : 0;
    (out[index] as { count: number }).count++;
  }
  return out;
}

/** Summarises finished episodes: reward per role, pass@k, tokens, errors by type, stop conditions. */
export function summarize(options: {
  episodes: Episode[];
  env: string;
  model: string;
  /** The role whose traces define the top-level pass@k and `rewardMean` (default: the only scored role). */
  primaryRole?: string;
  passThreshold?: number;
  /** Overrides the wall time computed from the episodes' intervals. */
  wallSeconds?: number;
  /** Model → price per million tokens, for calls whose provider sent no cost. */
  prices?: PriceTable;
}): EvalSummary {
  const { episodes } = options;
  const threshold = options.passThreshold ?? 1;
  const counted = tally(episodes);
  const byRole: Record<string, RoleSummary> = {};
  for (const role of Object.keys(counted.traceCounts)) byRole[role] = roleSummary(episodes, role, counted, threshold);
  const primary = primaryRoleOf(byRole, options.primaryRole);
  const okEpisodes = episodes.filter((e) => e.ok).length;
  const costs = runCost(
    episodes.flatMap((e) => e.traces),
    options.prices,
  );
  let { cost, anyCost } = counted;
  if (costs.total.agent !== null || costs.total.judge !== null) {
    cost = (costs.total.agent ?? 0) + (costs.total.judge ?? 0);
    anyCost = true;
  }
  const { prompt, completion } = counted;
  return {
    env: options.env,
    model: options.model,
    episodes: episodes.length,
    episodesOk: okEpisodes,
    episodesFailed: episodes.length - okEpisodes,
    primaryRole: primary,
    rewardMean: primary ? (byRole[primary]?.rewardMean ?? null) : null,
    byRole,
    passAtK: primary ? { ...byRole[primary]?.passAtK } : {},
    passThreshold: threshold,
    tokens: {
      prompt,
      completion,
      total: prompt + completion,
      perEpisode: episodes.length ? (prompt + completion) / episodes.length : 0,
    },
    cost: anyCost ? cost : null,
    costByRole: costs.byRole,
    judgeCost: costs.total.judge,
    errorsByType: counted.errorsByType,
    stopConditions: counted.stopConditions,
    wallSeconds: options.wallSeconds ?? activeMs(episodes.map((e) => ({ start: e.startedAt, end: e.endedAt }))) / 1000,
  };
}

/** What one pass over the episodes counts: per role, errors, stop conditions, tokens and provider costs. */
interface Tally {
  /** Rewards of the ok, scored traces, per role. */
  rewards: Record<string, number[]>;
  okCounts: Record<string, number>;
  traceCounts: Record<string, number>;
  trainable: Record<string, boolean>;
  errorsByType: Record<string, number>;
  stopConditions: Record<string, number>;
  /** Prompt tokens, cached input included. */
  prompt: number;
  completion: number;
  /** USD the providers reported; `anyCost` tells a sum of 0 from no report. */
  cost: number;
  anyCost: boolean;
}

function tally(episodes: Episode[]): Tally {
  const t: Tally = {
    rewards: {},
    okCounts: {},
    traceCounts: {},
    trainable: {},
    errorsByType: {},
    stopConditions: {},
    prompt: 0,
    completion: 0,
    cost: 0,
    anyCost: false,
  };
  const countError = (type: string) => {
    t.errorsByType[type] = (t.errorsByType[type] ?? 0) + 1;
  };
  for (const episode of episodes) {
    for (const error of episode.errors) countError(error.type);
    for (const trace of episode.traces) {
      const role = trace.agent.name;
      t.traceCounts[role] = (t.traceCounts[role] ?? 0) + 1;
      t.trainable[role] = (t.trainable[role] ?? false) || trace.agent.trainable;
      if (trace.ok) {
        t.okCounts[role] = (t.okCounts[role] ?? 0) + 1;
        if (isScored(trace)) (t.rewards[role] ??= []).push(trace.reward);
      }
      for (const error of trace.errors) countError(error.type);
      const stop = trace.stopCondition ?? 'none';
      t.stopConditions[stop] = (t.stopConditions[stop] ?? 0) + 1;
      const usage = trace.usage;
      t.prompt += usage.promptTokens + (usage.cachedInputTokens ?? 0);
      t.completion += usage.completionTokens;
      if (usage.cost !== undefined) {
        t.cost += usage.cost;
        t.anyCost = true;
      }
    }
  }
  return t;
}

function roleSummary(episodes: Episode[], role: string, counted: Tally, threshold: number): RoleSummary {
  const values = counted.rewards[role] ?? [];
  const s = stats(values);
  return {
    traces: counted.traceCounts[role] ?? 0,
    ok: counted.okCounts[role] ?? 0,
    trainable: counted.trainable[role] ?? false,
    scored: values.length,
    rewardMean: s.mean,
    rewardStd: s.std,
    rewardMin: s.min,
    rewardMax: s.max,
    histogram: histogram(values, s.min, s.max),
    // pass@k reads a reward as pass/fail: none for rewards outside [0, 1] (a zero-sum game's payoffs).
    passAtK: values.length && values.every((v) => v >= 0 && v <= 1) ? rolePassAtK(episodes, role, threshold) : {},
  };
}

/** The role asked for when it is scored, else the only scored role, else none. */
function primaryRoleOf(byRole: Record<string, RoleSummary>, requested: string | undefined): string | null {
  if (requested !== undefined && byRole[requested]?.scored) return requested;
  const scoredRoles = Object.keys(byRole).filter((role) => (byRole[role]?.scored ?? 0) > 0);
  return scoredRoles.length === 1 ? (scoredRoles[0] as string) : null;
}

/** A trace is scored when at least one of its rewards is non-null (a frozen judge's has none). */
function isScored(trace: { rewards: Record<string, unknown> }): boolean {
  return Object.values(trace.rewards).some((r) => r !== null && r !== undefined);
}

/** pass@k of one role: per task, every trace of the role is one sample (failed traces count as misses). */
function rolePassAtK(episodes: Episode[], role: string, threshold: number): Record<string, number> {
  const perTask = new Map<string, { n: number; c: number }>();
  for (const episode of episodes) {
    const entry = perTask.get(episode.task.key) ?? { n: 0, c: 0 };
    for (const trace of episode.traces) {
      if (trace.agent.name !== role) continue;
      entry.n++;
      if (trace.ok && isScored(trace) && trace.reward >= threshold) entry.c++;
    }
    perTask.set(episode.task.key, entry);
  }
  const samples = [...perTask.values()].filter((e) => e.n > 0);
  const out: Record<string, number> = {};
  const minN = samples.length ? Math.min(...samples.map((e) => e.n)) : 0;
  for (let k = 1; k <= minN; k = k * 2 > minN && k < minN ? minN : k * 2) {
    out[`pass@${k}`] = samples.reduce((sum, e) => sum + passAtK(e.n, e.c, k), 0) / samples.length;
    if (k === minN) break;
  }
  return out;
}

/** A short human-readable summary (for the terminal). */
export function formatSummary(summary: EvalSummary): string {
  const lines = [
    `env ${summary.env}  model ${summary.model}`,
    `episodes ${summary.episodes} (ok ${summary.episodesOk}, failed ${summary.episodesFailed}) in ${summary.wallSeconds.toFixed(1)}s`,
  ];
  for (const [role, s] of Object.entries(summary.byRole)) {
    if (!s.scored) {
      lines.push(`  ${role}: not scored${s.trainable ? '' : ' (frozen)'}, ${s.ok}/${s.traces} ok traces`);
      continue;
    }
    const pass = Object.entries(s.passAtK)
      .map(([k, v]) => `${k} ${v.toFixed(3)}`)
      .join('  ');
    lines.push(
      `  ${role}: reward mean ${s.rewardMean?.toFixed(3) ?? 'n/a'} (min ${s.rewardMin ?? 'n/a'}, max ${s.rewardMax ?? 'n/a'}) over ${s.scored} scored of ${s.ok}/${s.traces} ok traces${pass ? `; ${pass}` : ''}`,
    );
  }
  lines.push(
    `  tokens ${summary.tokens.total} (prompt ${summary.tokens.prompt}, completion ${summary.tokens.completion})${summary.cost !== null ? `  cost $${summary.cost.toFixed(4)}` : ''}${summary.judgeCost !== null ? ` (judges $${summary.judgeCost.toFixed(4)})` : ''}`,
  );
  if (Object.keys(summary.errorsByType).length) {
    lines.push(
      `  errors: ${Object.entries(summary.errorsByType)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ')}`,
    );
  }
  lines.push(
    `  stop conditions: ${Object.entries(summary.stopConditions)
      .map(([t, n]) => `${t} ${n}`)
      .join(', ')}`,
  );
  return lines.join('\n');
}
