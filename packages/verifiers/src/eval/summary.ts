import type { Episode } from '../trace/episode.ts';

/** Unbiased pass@k estimate from n samples with c passes: 1 − C(n−c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples, got ${n}`);
  if (n - c < k) return 1;
  let ratio = 1;
  for (let i = n - c + 1; i <= n; i++) ratio *= 1 - k / i;
  return 1 - ratio;
}

export interface RoleSummary {
  traces: number;
  ok: number;
  rewardMean: number | null;
  rewardStd: number | null;
  rewardMin: number | null;
  rewardMax: number | null;
  /** Reward histogram over 10 equal bins between min and max. */
  histogram: { from: number; to: number; count: number }[];
}

export interface EvalSummary {
  env: string;
  model: string;
  episodes: number;
  episodesOk: number;
  episodesFailed: number;
  /** Mean reward of the primary role's traces. */
  rewardMean: number | null;
  byRole: Record<string, RoleSummary>;
  /** pass@k over the primary role's traces per task (reward ≥ threshold counts as a pass). */
  passAtK: Record<string, number>;
  passThreshold: number;
  tokens: { prompt: number; completion: number; total: number; perEpisode: number };
  cost: number | null;
  errorsByType: Record<string, number>;
  stopConditions: Record<string, number>;
  wallSeconds: number;
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
  /** The role whose traces define pass@k and `rewardMean` (default: the first role seen). */
  primaryRole?: string;
  passThreshold?: number;
  wallSeconds?: number;
}): EvalSummary {
  const { episodes } = options;
  const threshold = options.passThreshold ?? 1;
  const rewards: Record<string, number[]> = {};
  const okCounts: Record<string, number> = {};
  const traceCounts: Record<string, number> = {};
  const errorsByType: Record<string, number> = {};
  const stopConditions: Record<string, number> = {};
  let prompt = 0;
  let completion = 0;
  let cost = 0;
  let anyCost = false;
  let primary = options.primaryRole;
  for (const episode of episodes) {
    for (const error of episode.errors) errorsByType[error.type] = (errorsByType[error.type] ?? 0) + 1;
    for (const trace of episode.traces) {
      const role = trace.agent.name;
      primary ??= role;
      traceCounts[role] = (traceCounts[role] ?? 0) + 1;
      if (trace.ok) {
        okCounts[role] = (okCounts[role] ?? 0) + 1;
        (rewards[role] ??= []).push(trace.reward);
      }
      for (const error of trace.errors) errorsByType[error.type] = (errorsByType[error.type] ?? 0) + 1;
      const stop = trace.stopCondition ?? 'none';
      stopConditions[stop] = (stopConditions[stop] ?? 0) + 1;
      const usage = trace.usage;
      prompt += usage.promptTokens + (usage.cachedInputTokens ?? 0);
      completion += usage.completionTokens;
      if (usage.cost !== undefined) {
        cost += usage.cost;
        anyCost = true;
      }
    }
  }
  const byRole: Record<string, RoleSummary> = {};
  for (const role of Object.keys(traceCounts)) {
    const values = rewards[role] ?? [];
    const s = stats(values);
    byRole[role] = {
      traces: traceCounts[role] ?? 0,
      ok: okCounts[role] ?? 0,
      rewardMean: s.mean,
      rewardStd: s.std,
      rewardMin: s.min,
      rewardMax: s.max,
      histogram: histogram(values, s.min, s.max),
    };
  }
  // pass@k: per task, every primary-role trace is one sample (failed traces count as misses).
  const perTask = new Map<string, { n: number; c: number }>();
  for (const episode of episodes) {
    const entry = perTask.get(episode.task.key) ?? { n: 0, c: 0 };
    for (const trace of episode.traces) {
      if (trace.agent.name !== primary) continue;
      entry.n++;
      if (trace.ok && trace.reward >= threshold) entry.c++;
    }
    perTask.set(episode.task.key, entry);
  }
  const samples = [...perTask.values()].filter((e) => e.n > 0);
  const passAtKOut: Record<string, number> = {};
  const minN = samples.length ? Math.min(...samples.map((e) => e.n)) : 0;
  for (let k = 1; k <= minN; k = k * 2 > minN && k < minN ? minN : k * 2) {
    passAtKOut[`pass@${k}`] = samples.reduce((sum, e) => sum + passAtK(e.n, e.c, k), 0) / samples.length;
    if (k === minN) break;
  }
  const okEpisodes = episodes.filter((e) => e.ok).length;
  return {
    env: options.env,
    model: options.model,
    episodes: episodes.length,
    episodesOk: okEpisodes,
    episodesFailed: episodes.length - okEpisodes,
    rewardMean: primary ? (byRole[primary]?.rewardMean ?? null) : null,
    byRole,
    passAtK: passAtKOut,
    passThreshold: threshold,
    tokens: {
      prompt,
      completion,
      total: prompt + completion,
      perEpisode: episodes.length ? (prompt + completion) / episodes.length : 0,
    },
    cost: anyCost ? cost : null,
    errorsByType,
    stopConditions,
    wallSeconds: options.wallSeconds ?? 0,
  };
}

/** A short human-readable summary (for the terminal). */
export function formatSummary(summary: EvalSummary): string {
  const lines = [
    `env ${summary.env}  model ${summary.model}`,
    `episodes ${summary.episodes} (ok ${summary.episodesOk}, failed ${summary.episodesFailed}) in ${summary.wallSeconds.toFixed(1)}s`,
  ];
  for (const [role, s] of Object.entries(summary.byRole)) {
    lines.push(
      `  ${role}: reward mean ${s.rewardMean?.toFixed(3) ?? 'n/a'} (min ${s.rewardMin ?? 'n/a'}, max ${s.rewardMax ?? 'n/a'}) over ${s.ok}/${s.traces} ok traces`,
    );
  }
  if (Object.keys(summary.passAtK).length) {
    lines.push(
      `  ${Object.entries(summary.passAtK)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join('  ')}`,
    );
  }
  lines.push(
    `  tokens ${summary.tokens.total} (prompt ${summary.tokens.prompt}, completion ${summary.tokens.completion})${summary.cost !== null ? `  cost $${summary.cost.toFixed(4)}` : ''}`,
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
