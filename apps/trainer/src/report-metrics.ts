/** One line of `metrics.jsonl`: `step` and the metrics logged at it. */
export type MetricsRow = Record<string, unknown>;

/** A group of metric keys drawn in one chart. */
export interface MetricGroup {
  /** The source (`train/<source>/…`, `eval/<source>/…`). */
  source: string;
  /** What the keys share (`reward`, `probe/accuracy`, `nash_conv`). */
  name: string;
  /** Metric key → legend label. */
  keys: { key: string; label: string }[];
}

/** Numeric keys of the rows in first-seen order (`step` excluded). */
export function numericKeys(rows: readonly MetricsRow[]): string[] {
  const keys = new Set<string>();
  for (const r of rows)
    for (const [k, v] of Object.entries(r)) if (k !== 'step' && typeof v === 'number' && Number.isFinite(v)) keys.add(k);
  return [...keys];
}

/** The (step, value) points of `key`, skipping rows without a finite number there. */
export function pointsOf(rows: readonly MetricsRow[], key: string): [number, number][] {
  const points: [number, number][] = [];
  for (const r of rows) {
    const x = r.step;
    const y = r[key];
    if (typeof x === 'number' && Number.isFinite(x) && typeof y === 'number' && Number.isFinite(y)) points.push([x, y]);
  }
  return points;
}

/** `train` metrics of the sources trained on, `eval` those of sources only evaluated (played, never trained). */
export type SourceKind = 'train' | 'eval';

/**
 * The roles of each source, in first-seen order, from `<kind>/<source>/<role>/reward/mean` (and
 * for `train`, `…/is_trainable/mean` and `…/traces`) keys.
 */
export function rolesBySource(keys: readonly string[], kind: SourceKind = 'train'): Map<string, string[]> {
  const pattern =
    kind === 'train'
      ? /^train\/([^/]+)\/([^/]+)\/(reward\/mean|is_trainable\/mean|traces)$/
      : /^eval\/([^/]+)\/([^/]+)\/reward\/mean$/;
  const roles = new Map<string, string[]>();
  for (const key of keys) {
    const match = pattern.exec(key);
    if (!match) continue;
    const [, source, role] = match as unknown as [string, string, string];
    const list = roles.get(source) ?? [];
    if (!list.includes(role)) list.push(role);
    roles.set(source, list);
  }
  return roles;
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** Role bindings of the run's config that are not trained (`trainable = false`, a checkpoint, a model, a pool), per source name. */
function frozenInConfig(config: unknown): Map<string, Set<string>> {
  const frozen = new Map<string, Set<string>>();
  const sources = record(record(config)?.train)?.source;
  if (!Array.isArray(sources)) return frozen;
  for (const source of sources) {
    const s = record(source);
    const name = typeof s?.name === 'string' ? s.name : typeof s?.env === 'string' ? s.env : null;
    const roles = record(s?.roles);
    if (!name || !roles) continue;
    for (const [role, raw] of Object.entries(roles)) {
      const binding = record(raw);
      if (!binding) continue;
      const trained =
        binding.model === undefined &&
        binding.checkpoint === undefined &&
        binding.pool === undefined &&
        binding.trainable !== false;
      if (!trained) frozen.set(name, (frozen.get(name) ?? new Set()).add(role));
    }
  }
  return frozen;
}

/**
 * Roles that were never trained, per source: bound so in the config, or logged with
 * `is_trainable/mean` 0 at every step. Their per-role curves are not drawn (their trained
 * statistics are empty, not zero).
 */
export function frozenRoles(rows: readonly MetricsRow[], config: unknown): Map<string, Set<string>> {
  const frozen = frozenInConfig(config);
  for (const [source, roles] of rolesBySource(numericKeys(rows))) {
    for (const role of roles) {
      const values = pointsOf(rows, `train/${source}/${role}/is_trainable/mean`).map((p) => p[1]);
      if (values.length > 0 && values.every((v) => v === 0)) frozen.set(source, (frozen.get(source) ?? new Set()).add(role));
    }
  }
  return frozen;
}

/**
 * The per-role metrics an env logs (`train/<source>/<role>/metric/<name>/mean`), one group per
 * source and metric name with a key per role.
 */
export function roleMetricGroups(keys: readonly string[], kind: SourceKind = 'train'): MetricGroup[] {
  const groups = new Map<string, MetricGroup>();
  const pattern = new RegExp(`^${kind}/([^/]+)/([^/]+)/metric/(.+)/mean$`);
  for (const key of keys) {
    const match = pattern.exec(key);
    if (!match) continue;
    const [, source, role, name] = match as unknown as [string, string, string, string];
    const id = `${source}\u0000${name}`;
    const group = groups.get(id) ?? { source, name, keys: [] };
    group.keys.push({ key, label: role });
    groups.set(id, group);
  }
  return [...groups.values()];
}

/**
 * The evaluator's metrics (`eval/<source>/<path>`) grouped for charts: keys under one folder
 * (`probe/accuracy/len1`, `probe/accuracy/len2`) share a chart, and so do siblings that extend
 * another's name (`nash_conv`, `nash_conv_average`); the rest get a chart each.
 */
export function evaluatorGroups(keys: readonly string[]): MetricGroup[] {
  const groups = new Map<string, MetricGroup>();
  // Eval sources log what training sources log (per role, and episode counts): not the evaluator's.
  const played = rolesBySource(keys, 'eval');
  const isPlayed = (key: string) => {
    const [, source, role, ...rest] = key.split('/');
    const roles = played.get(source as string);
    if (!roles) return false;
    return rest.length === 0 ? role === 'episodes' || role === 'failed_episodes' : roles.includes(role as string);
  };
  const evalKeys = keys.filter((k) => k.startsWith('eval/') && k.split('/').length >= 3 && !isPlayed(k));
  for (const key of evalKeys) {
    const [, source, ...rest] = key.split('/') as [string, string, ...string[]];
    const path = rest.join('/');
    const folder = rest.slice(0, -1).join('/');
    const leaf = rest.at(-1) as string;
    let name = folder || leaf;
    let label = folder ? leaf : path;
    if (!folder) {
      // A sibling whose name this one extends (`nash_conv` for `nash_conv_average`) names the group.
      const prefix = `eval/${source}/`;
      const base = evalKeys
        .filter((k) => k.startsWith(prefix))
        .map((k) => k.slice(prefix.length))
        .filter((k) => !k.includes('/') && k !== leaf && (leaf.startsWith(`${k}_`) || leaf.startsWith(`${k}-`)))
        .sort((a, b) => a.length - b.length)[0];
      if (base) name = base;
      label = leaf;
    }
    const id = `${source}\u0000${name}`;
    const group = groups.get(id) ?? { source, name, keys: [] };
    group.keys.push({ key, label });
    groups.set(id, group);
  }
  return [...groups.values()];
}

/** The last finite value of `key` and its step, or null. */
export function lastPoint(rows: readonly MetricsRow[], key: string): [number, number] | null {
  return pointsOf(rows, key).at(-1) ?? null;
}

/** Mean of `key` over the last `window` steps that logged it. */
export function tailMean(rows: readonly MetricsRow[], key: string, window: number): number | null {
  const values = pointsOf(rows, key)
    .slice(-window)
    .map((p) => p[1]);
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}
