// The numbers a comparison shows: per-role and per-run statistics of two run indexes, and the
// tasks of both runs with their episodes.
import type { EpisodeRow, ViewerIndex, ViewerRoleSummary } from './types.ts';

/** One compared quantity: A's value, B's value, and how to format them. */
export interface ComparedValue {
  key: string;
  label: string;
  a: number | null;
  b: number | null;
  kind: 'num' | 'int' | 'pct' | 'tokens' | 'cost' | 'ms';
  /** True when a larger value is better (colours the difference). */
  higherIsBetter?: boolean;
}

function roleRows(a: ViewerRoleSummary | undefined, b: ViewerRoleSummary | undefined): ComparedValue[] {
  const ks = [...new Set([...(a?.passAtK ?? []), ...(b?.passAtK ?? [])].map((p) => p.k))].sort((x, y) => x - y);
  const pass = (role: ViewerRoleSummary | undefined, k: number) => role?.passAtK.find((p) => p.k === k)?.value ?? null;
  const rows: ComparedValue[] = [
    {
      key: 'reward',
      label: 'mean reward',
      a: a?.rewardMean ?? null,
      b: b?.rewardMean ?? null,
      kind: 'num',
      higherIsBetter: true,
    },
    { key: 'reward-std', label: 'reward σ', a: a?.rewardStd ?? null, b: b?.rewardStd ?? null, kind: 'num' },
    ...ks.map(
      (k): ComparedValue => ({
        key: `pass@${k}`,
        label: `pass@${k}`,
        a: pass(a, k),
        b: pass(b, k),
        kind: 'pct',
        higherIsBetter: true,
      }),
    ),
    { key: 'scored', label: 'scored traces', a: a?.scored ?? null, b: b?.scored ?? null, kind: 'int' },
    { key: 'errored', label: 'errored traces', a: a?.errored ?? null, b: b?.errored ?? null, kind: 'int', higherIsBetter: false },
    { key: 'tokens-in', label: 'prompt tokens', a: a?.tokens.prompt ?? null, b: b?.tokens.prompt ?? null, kind: 'tokens' },
    {
      key: 'tokens-out',
      label: 'completion tokens',
      a: a?.tokens.completion ?? null,
      b: b?.tokens.completion ?? null,
      kind: 'tokens',
    },
    { key: 'cost', label: 'cost', a: a?.tokens.cost ?? null, b: b?.tokens.cost ?? null, kind: 'cost', higherIsBetter: false },
    {
      key: 'judge-cost',
      label: 'of which judges',
      a: a?.tokens.judgeCost ?? null,
      b: b?.tokens.judgeCost ?? null,
      kind: 'cost',
      higherIsBetter: false,
    },
    { key: 'turns', label: 'turns / trace', a: a?.turnsMean ?? null, b: b?.turnsMean ?? null, kind: 'num' },
  ];
  return rows;
}

/** The roles of both runs (A's order, then B's new ones), each with its compared rows. */
export function compareRoles(a: ViewerIndex, b: ViewerIndex): { name: string; rows: ComparedValue[] }[] {
  const names = [...new Set([...a.roles.map((r) => r.name), ...b.roles.map((r) => r.name)])];
  return names.map((name) => ({
    name,
    rows: roleRows(
      a.roles.find((r) => r.name === name),
      b.roles.find((r) => r.name === name),
    ),
  }));
}

/** Run totals of both runs. */
export function compareTotals(a: ViewerIndex, b: ViewerIndex): ComparedValue[] {
  const errors = (index: ViewerIndex) => index.errors.reduce((n, e) => n + e.count, 0);
  const ok = (index: ViewerIndex) => (index.totals.episodes ? index.totals.okEpisodes / index.totals.episodes : null);
  const tokens = (index: ViewerIndex) => index.totals.tokens.prompt + index.totals.tokens.completion;
  return [
    { key: 'episodes', label: 'episodes', a: a.totals.episodes, b: b.totals.episodes, kind: 'int' },
    { key: 'ok', label: 'episodes ok', a: ok(a), b: ok(b), kind: 'pct', higherIsBetter: true },
    { key: 'tasks', label: 'tasks', a: a.totals.tasks, b: b.totals.tasks, kind: 'int' },
    { key: 'calls', label: 'model calls', a: a.totals.calls, b: b.totals.calls, kind: 'int' },
    { key: 'tokens', label: 'tokens', a: tokens(a), b: tokens(b), kind: 'tokens' },
    { key: 'cost', label: 'cost', a: a.totals.tokens.cost, b: b.totals.tokens.cost, kind: 'cost', higherIsBetter: false },
    { key: 'errors', label: 'errors', a: errors(a), b: errors(b), kind: 'int', higherIsBetter: false },
    { key: 'wall', label: 'wall time', a: a.totals.wallMs, b: b.totals.wallMs, kind: 'ms' },
  ];
}

/** A task of either run with its episodes in each. */
export interface ComparedTask {
  key: string;
  a: EpisodeRow[];
  b: EpisodeRow[];
}

/** The tasks of both runs (A's order, then B's new ones) with their episodes, in rollout order. */
export function compareTasks(a: ViewerIndex, b: ViewerIndex): ComparedTask[] {
  const tasks = new Map<string, ComparedTask>();
  const add = (rows: EpisodeRow[], side: 'a' | 'b') => {
    for (const row of rows) {
      let task = tasks.get(row.task);
      if (!task) tasks.set(row.task, (task = { key: row.task, a: [], b: [] }));
      task[side].push(row);
    }
  };
  add(a.episodes, 'a');
  add(b.episodes, 'b');
  for (const task of tasks.values())
    for (const side of [task.a, task.b]) side.sort((x, y) => x.group - y.group || x.attempt - y.attempt || x.i - y.i);
  return [...tasks.values()];
}

/** Mean reward of `role` over episodes (null when none was scored). */
export function meanReward(rows: EpisodeRow[], role: string): number | null {
  let sum = 0;
  let n = 0;
  for (const row of rows) {
    const value = row.rewards[role];
    if (value === null || value === undefined) continue;
    sum += value;
    n++;
  }
  return n ? sum / n : null;
}
