import { escapeHtml } from './report-chart.ts';
import {
  evaluatorGroups,
  frozenRoles,
  lastPoint,
  type MetricGroup,
  type MetricsRow,
  numericKeys,
  pointsOf,
  rolesBySource,
  tailMean,
} from './report-metrics.ts';

/** A metric value for people: three significant digits, thousands grouped, no float noise. */
export function formatValue(value: number): string {
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return String(Number(value.toFixed(1)));
  if (abs < 1e-4) return value.toExponential(2).replace(/\.?0+e/, 'e');
  return String(Number(value.toPrecision(3)));
}

/** Seconds as "4.2 s", "3 min 12 s" or "1 h 05 min". */
export function formatDuration(seconds: number): string {
  if (!(seconds >= 0)) return '—';
  if (seconds < 10) return `${Number(seconds.toFixed(1))} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(Math.round(seconds % 60)).padStart(2, '0')} s`;
  return `${Math.floor(seconds / 3600)} h ${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')} min`;
}

/** camelCase → snake_case: config keys as a run's TOML spells them. */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A config value on one line: scalars as they are, lists and tables inline (`a = 1, b = "x"`). */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (isRecord(value))
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${snake(k)} = ${inline(v)}`)
      .join(', ')} }`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** Every leaf of the config as (dotted snake_case path, one-line value), tables of sources by index. */
export function flattenConfig(config: unknown, prefix = ''): [string, string][] {
  if (!isRecord(config)) return prefix ? [[prefix, inline(config)]] : [];
  const out: [string, string][] = [];
  for (const [key, value] of Object.entries(config)) {
    const path = prefix ? `${prefix}.${snake(key)}` : snake(key);
    if (isRecord(value) && Object.keys(value).length > 0 && !/\.(options|algorithm|sampling)$|^policy\.vocabulary$/.test(path))
      out.push(...flattenConfig(value, path));
    else if (Array.isArray(value) && value.some(isRecord))
      value.forEach((item, i) => {
        out.push(...flattenConfig(item, `${path}[${i}]`));
      });
    else out.push([path, inline(value)]);
  }
  return out;
}

/** The settings a reader of a training curve asks for first, by section and config path (shown when present). */
const KEY_SETTINGS: { title: string; prefix: string; paths: string[] }[] = [
  {
    title: 'run',
    prefix: '',
    paths: [
      'seed',
      'max_steps',
      'groups_per_step',
      'max_async',
      'max_off_policy_steps',
      'filter_zero_advantages',
      'train.eval_every',
      'transport.type',
    ],
  },
  { title: 'policy', prefix: 'policy.', paths: ['engine', 'model', 'd_model', 'layers', 'heads', 'temperature', 'max_tokens'] },
  { title: 'trainer', prefix: 'trainer.', paths: ['lr', 'betas', 'weight_decay', 'max_grad_norm', 'ref_kl_tau'] },
];

/** A titled list of (setting, value). */
export interface SettingsSection {
  title: string;
  rows: [string, string][];
}

/**
 * The config's key settings: each source's env, algorithm, group size, options and role
 * bindings, then the run's size and schedule, the policy and the optimiser.
 */
export function keySettings(config: unknown): SettingsSection[] {
  const flat = new Map(flattenConfig(config));
  const sections: SettingsSection[] = [];
  const sources = isRecord(config) && isRecord(config.train) && Array.isArray(config.train.source) ? config.train.source : [];
  for (const source of sources) {
    if (!isRecord(source)) continue;
    const rows: [string, string][] = [['env', inline(source.env)]];
    for (const key of ['algorithm', 'groupSize', 'ratio', 'options'])
      if (source[key] !== undefined) rows.push([snake(key), inline(source[key])]);
    if (isRecord(source.roles))
      for (const [role, binding] of Object.entries(source.roles)) rows.push([`roles.${role}`, inline(binding)]);
    const name = typeof source.name === 'string' ? source.name : typeof source.env === 'string' ? source.env : '?';
    sections.push({ title: `source ${name}`, rows });
  }
  for (const { title, prefix, paths } of KEY_SETTINGS) {
    const rows = paths.flatMap((path): [string, string][] => {
      const value = flat.get(`${prefix}${path}`);
      return value === undefined ? [] : [[path.replace(/^train\./, ''), value]];
    });
    if (rows.length) sections.push({ title, rows });
  }
  return sections;
}

function tile(options: { label: string; value: string; sub?: string; kind?: string }): string {
  return `<div class="tile${options.kind ? ` ${options.kind}` : ''}"><div class="tile-label">${escapeHtml(options.label)}</div><div class="tile-value">${escapeHtml(options.value)}</div>${
    options.sub ? `<div class="tile-sub">${escapeHtml(options.sub)}</div>` : ''
  }</div>`;
}

/** Steps, episodes, failed episodes and wall time of the run. */
function runTiles(rows: readonly MetricsRow[], config: unknown, keys: readonly string[]): string[] {
  const last = rows.at(-1) ?? {};
  const step = typeof last.step === 'number' ? last.step : 0;
  const maxSteps = isRecord(config) && typeof config.maxSteps === 'number' ? config.maxSteps : null;
  const episodes = typeof last.episodes === 'number' ? last.episodes : 0;
  const elapsed = lastPoint(rows, 'time/elapsed')?.[1];
  const failed = keys
    .filter((k) => /^train\/[^/]+\/failed_episodes$/.test(k))
    .reduce((sum, k) => sum + pointsOf(rows, k).reduce((a, p) => a + p[1], 0), 0);
  const tiles = [
    tile({ label: 'steps', value: step.toLocaleString('en-US'), ...(maxSteps ? { sub: `of max_steps ${maxSteps}` } : {}) }),
    tile({
      label: 'episodes',
      value: episodes.toLocaleString('en-US'),
      ...(step > 0 ? { sub: `${formatValue(episodes / step)} per step` } : {}),
    }),
    tile({
      label: 'wall time',
      value: elapsed === undefined ? '—' : formatDuration(elapsed),
      ...(elapsed ? { sub: `${formatValue(episodes / elapsed)} episodes/s` } : {}),
    }),
  ];
  if (failed > 0)
    tiles.push(
      tile({
        label: 'failed episodes',
        value: failed.toLocaleString('en-US'),
        sub: 'recorded as failed, not trained',
        kind: 'warn',
      }),
    );
  return tiles;
}

/** A group's keys worth a tile: all of a small group; of a large one (a folder of probes) its summary (`mean`, `average`, `all`), else its first. */
function headlineKeys(group: MetricGroup): MetricGroup['keys'] {
  if (group.keys.length <= 4) return group.keys;
  const summary = group.keys.filter((k) => /^(mean|average|avg|all|overall|total)$/.test(k.label));
  return summary.length ? summary : group.keys.slice(0, 1);
}

/**
 * The headline numbers: steps, episodes, wall time, each trained role's final reward (the mean
 * of the last steps, noise aside) and each evaluator metric's last value with its range. Frozen
 * roles are named as such.
 */
export function renderTiles(rows: readonly MetricsRow[], config: unknown): string {
  const keys = numericKeys(rows);
  const tiles = runTiles(rows, config, keys);
  const frozen = frozenRoles(rows, config);
  const sources = rolesBySource(keys);
  const window = Math.max(1, Math.min(50, Math.round(rows.length / 10)));
  for (const [source, roles] of sources) {
    const prefix = sources.size > 1 ? `${source} · ` : '';
    for (const role of roles) {
      if (frozen.get(source)?.has(role)) {
        tiles.push(tile({ label: `${prefix}${role}`, value: 'frozen', sub: 'not trained', kind: 'frozen' }));
        continue;
      }
      const key = `train/${source}/${role}/reward/mean`;
      const mean = tailMean(rows, key, window);
      const last = lastPoint(rows, key);
      if (mean === null || !last) continue;
      const sub = window > 1 ? `mean of the last ${window} steps · last ${formatValue(last[1])}` : `at step ${last[0]}`;
      tiles.push(tile({ label: `${prefix}${role} reward`, value: formatValue(mean), sub, kind: 'reward' }));
    }
  }
  const evaluated = evaluatorGroups(keys);
  const many = new Set(evaluated.map((g) => g.source)).size > 1;
  for (const group of evaluated)
    for (const { key } of headlineKeys(group)) {
      const points = pointsOf(rows, key);
      const last = points.at(-1);
      if (!last) continue;
      const values = points.map((p) => p[1]);
      const name = key.split('/').slice(2).join('/');
      const sub = `at step ${last[0]} · range ${formatValue(Math.min(...values))} to ${formatValue(Math.max(...values))}`;
      tiles.push(tile({ label: `${many ? `${group.source} · ` : ''}${name}`, value: formatValue(last[1]), sub, kind: 'eval' }));
    }
  return `<div class="tiles">${tiles.join('')}</div>`;
}

/** The key settings in titled blocks, and the whole config (folded) below. */
export function renderSettings(config: unknown): string {
  const sections = keySettings(config);
  if (sections.length === 0) return '<p class="muted">no config.json in the run directory</p>';
  const row = ([k, v]: [string, string]) => `<div class="setting"><dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd></div>`;
  const blocks = sections.map(
    (s) => `<section class="settings-block"><h3>${escapeHtml(s.title)}</h3><dl>${s.rows.map(row).join('')}</dl></section>`,
  );
  return `<div class="settings">${blocks.join('')}</div><details class="full-config"><summary>Full config (config.json)</summary><dl class="flat-config">${flattenConfig(config).map(row).join('')}</dl></details>`;
}
