import { constants } from 'node:fs';
import { open, readdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { ConfigError } from '@troupe/verifiers';
import { CHART_CSS, type ChartSeries, escapeHtml, renderChart, seriesStyle } from './report-chart.ts';
import { renderSettings, renderTiles } from './report-header.ts';
import {
  evaluatorGroups,
  frozenRoles,
  type MetricGroup,
  type MetricsRow,
  numericKeys,
  pointsOf,
  roleMetricGroups,
  rolesBySource,
} from './report-metrics.ts';
import { camelKeys } from './run-config.ts';

/** A file the env's evaluator wrote into the run directory, as the report shows it. */
export interface ReportArtifact {
  /** File name in the run directory. */
  name: string;
  /** `json` and `text` are shown as text or a table, `svg` and `png` as images; `skipped` names a file too large to inline. */
  kind: 'json' | 'svg' | 'png' | 'skipped';
  /** The file's bytes (text for `json`/`svg`, raw for `png`); absent when `skipped`. */
  content?: Buffer;
  /** The file's size in bytes. */
  bytes: number;
}

/** What {@link renderReport} turns into a page. */
export interface ReportInput {
  /** The lines of `metrics.jsonl`. */
  rows: readonly MetricsRow[];
  /** The run's resolved config (`config.json`), or null. */
  config: unknown;
  /** The evaluator's files. */
  artifacts?: readonly ReportArtifact[];
  /** The run's name (its directory's). */
  runName?: string;
}

/** Steps logged; the x range every chart shares. */
function stepDomain(rows: readonly MetricsRow[]): [number, number] {
  const steps = rows.map((r) => r.step).filter((s): s is number => typeof s === 'number' && Number.isFinite(s));
  return steps.length ? [Math.min(...steps), Math.max(...steps)] : [0, 1];
}

function groupSeries(rows: readonly MetricsRow[], group: MetricGroup): ChartSeries[] {
  return group.keys.map(({ key, label }, i) => ({ key, label, ...seriesStyle(i), points: pointsOf(rows, key) }));
}

/** One chart per source of its roles' mean reward; roles not trained are named in the legend, not drawn. */
function rewardCharts(rows: readonly MetricsRow[], config: unknown, xDomain: [number, number]): string[] {
  const keys = numericKeys(rows);
  const frozen = frozenRoles(rows, config);
  const charts: string[] = [];
  for (const kind of ['train', 'eval'] as const)
    for (const [source, roles] of rolesBySource(keys, kind)) {
      const still = kind === 'train' ? (frozen.get(source) ?? new Set<string>()) : new Set<string>();
      const series = roles
        .map((role, i) => ({ role, i }))
        .filter(({ role }) => !still.has(role))
        .map(({ role, i }) => ({
          key: `${kind}/${source}/${role}/reward/mean`,
          label: role,
          ...seriesStyle(i),
          points: pointsOf(rows, `${kind}/${source}/${role}/reward/mean`),
        }));
      charts.push(
        renderChart({
          id: `${kind}-reward-${source}`,
          title: kind === 'train' ? 'Reward per role' : 'Reward per role (eval source)',
          subtitle: `${source} · mean over the step's episodes`,
          xDomain,
          series,
          frozen: roles.filter((r) => still.has(r)),
          smooth: true,
        }),
      );
    }
  return charts;
}

/** The evaluator's metrics, grouped (a folder of metrics, or a metric and its variants, per chart). */
function evaluatorCharts(rows: readonly MetricsRow[], xDomain: [number, number]): string[] {
  return evaluatorGroups(numericKeys(rows)).map((group) =>
    renderChart({
      id: `eval-${group.source}-${group.name}`,
      title: group.name,
      subtitle: `${group.source} evaluator`,
      xDomain,
      series: groupSeries(rows, group),
    }),
  );
}

/** The env's own per-role metrics (`metric/<name>/mean`), frozen roles left out. */
function roleMetricCharts(rows: readonly MetricsRow[], config: unknown, xDomain: [number, number]): string[] {
  const frozen = frozenRoles(rows, config);
  return roleMetricGroups(numericKeys(rows)).map((group) => {
    const still = frozen.get(group.source) ?? new Set<string>();
    const kept = { ...group, keys: group.keys.filter((k) => !still.has(k.label)) };
    return renderChart({
      id: `role-metric-${group.source}-${group.name}`,
      title: group.name,
      subtitle: `${group.source} · mean per role`,
      xDomain,
      series: groupSeries(rows, kept),
      frozen: group.keys.filter((k) => still.has(k.label)).map((k) => k.label),
      size: 'small',
      smooth: true,
    });
  });
}

/** The optimiser's and the loop's health: what the trainer and orchestrator log, when they log it. */
const DYNAMICS: { title: string; keys: string[]; unit?: string }[] = [
  { title: 'loss', keys: ['trainer/loss', 'trainer/rl_loss'] },
  { title: 'entropy', keys: ['trainer/entropy'] },
  { title: 'KL to the reference', keys: ['trainer/ref_kl'] },
  { title: 'gradient norm', keys: ['trainer/grad_norm'] },
  { title: 'learning rate', keys: ['trainer/lr'] },
  { title: 'off-policy staleness', keys: ['off_policy/staleness'], unit: 'steps' },
  { title: 'step time', keys: ['time/step', 'time/collect', 'time/train'], unit: 'ms' },
];

function dynamicsCharts(rows: readonly MetricsRow[], xDomain: [number, number]): string[] {
  const all = numericKeys(rows);
  const present = new Set(all);
  // A run of several policies logs `trainer/<policy>/<key>`: each chart draws every policy's series.
  const policies = [...new Set(all.flatMap((k) => /^trainer\/([^/]+)\/step$/.exec(k)?.[1] ?? []))];
  const keysOf = (d: (typeof DYNAMICS)[number]) =>
    d.keys.flatMap((k) => [k, ...(k.startsWith('trainer/') ? policies.map((p) => k.replace('trainer/', `trainer/${p}/`)) : [])]);
  return DYNAMICS.filter((d) => keysOf(d).some((k) => present.has(k))).map((d) =>
    renderChart({
      id: `dynamics-${d.title}`,
      title: d.title,
      ...(d.unit ? { subtitle: d.unit } : {}),
      xDomain,
      series: keysOf(d)
        .filter((k) => present.has(k))
        .map((key, i) => ({ key, label: key, ...seriesStyle(i), points: pointsOf(rows, key) })),
      size: 'small',
    }),
  );
}

/** Every logged series, one small chart each, filterable by name in the page; frozen roles' statistics are left out. */
function everySeries(rows: readonly MetricsRow[], config: unknown, xDomain: [number, number]): string {
  const frozen = frozenRoles(rows, config);
  const ofFrozen = (key: string) => {
    const [kind, source, role] = key.split('/');
    return kind === 'train' && frozen.get(source as string)?.has(role as string) === true;
  };
  const all = numericKeys(rows);
  const keys = all.filter((k) => !ofFrozen(k));
  const note = keys.length < all.length ? ` · ${all.length - keys.length} series of frozen roles left out` : '';
  const cells = keys.map(
    (key) =>
      `<div class="series-cell" data-key="${escapeHtml(key)}">${renderChart({
        id: key,
        title: key,
        xDomain,
        series: [{ key, label: key, ...seriesStyle(0), points: pointsOf(rows, key) }],
        size: 'small',
      })}</div>`,
  );
  return `<details class="every"><summary>Every logged series (${keys.length}${note})</summary><p><input id="series-filter" type="search" placeholder="filter by name, e.g. entropy" aria-label="filter series"></p><div class="grid" id="every-series">${cells.join('')}</div></details>`;
}

/** An object of equal-length number lists (a policy table) or of numbers, as an HTML table; else null. */
function jsonTable(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 || entries.length > 500) return null;
  const cell = (v: number) => {
    const bar = v >= 0 && v <= 1 ? ` style="--bar:${(v * 100).toFixed(1)}%"` : '';
    return `<td class="num${bar ? ' bar' : ''}"${bar}>${escapeHtml(String(Number(v.toPrecision(4))))}</td>`;
  };
  if (entries.every(([, v]) => typeof v === 'number' && Number.isFinite(v)))
    return `<table class="artifact-table"><tbody>${entries.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th>${cell(v as number)}</tr>`).join('')}</tbody></table>`;
  const first = entries[0]?.[1];
  const width = Array.isArray(first) ? first.length : 0;
  const numeric = (v: unknown) =>
    Array.isArray(v) && v.length === width && v.every((x) => typeof x === 'number' && Number.isFinite(x));
  if (width === 0 || width > 16 || !entries.every(([, v]) => numeric(v))) return null;
  const head = `<tr><th></th>${Array.from({ length: width }, (_, i) => `<th>[${i}]</th>`).join('')}</tr>`;
  const body = entries.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th>${(v as number[]).map(cell).join('')}</tr>`).join('');
  return `<table class="artifact-table"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

/** Text shown in full up to this many characters. */
const TEXT_LIMIT = 20_000;

function renderArtifact(artifact: ReportArtifact): string {
  const name = escapeHtml(artifact.name);
  const caption = `<figcaption>${name}</figcaption>`;
  if (artifact.kind === 'skipped' || !artifact.content)
    return `<figure class="artifact" data-artifact="${name}">${caption}<p class="muted">${artifact.bytes.toLocaleString('en-US')} bytes: too large to inline; open the file in the run directory</p></figure>`;
  // An image element never runs an SVG's scripts, and a data: URL keeps the page self-contained.
  if (artifact.kind === 'svg' || artifact.kind === 'png') {
    const type = artifact.kind === 'svg' ? 'image/svg+xml' : 'image/png';
    return `<figure class="artifact plot" data-artifact="${name}">${caption}<img alt="${name}" src="data:${type};base64,${artifact.content.toString('base64')}"></figure>`;
  }
  const text = artifact.content.toString('utf8');
  let table: string | null = null;
  try {
    table = jsonTable(JSON.parse(text));
  } catch {
    table = null;
  }
  const shown =
    text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}\n… (${text.length - TEXT_LIMIT} more characters in the file)` : text;
  return `<figure class="artifact" data-artifact="${name}">${caption}${table ?? `<pre>${escapeHtml(shown)}</pre>`}</figure>`;
}

const PAGE_CSS = `
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff;line-height:1.4}
main{max-width:1600px;margin:0 auto;padding:28px 32px 48px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:18px;margin:36px 0 14px;padding-bottom:6px;border-bottom:1px solid #d8dee4}
.lede{color:#57606a;margin:0 0 18px}
.muted{color:#57606a}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:10px;margin:0 0 18px}
.tile{border:1px solid #d0d7de;border-radius:8px;padding:10px 14px}
.tile-label{font-size:12px;color:#57606a}
.tile-value{font-size:24px;font-weight:600;font-variant-numeric:tabular-nums}
.tile-sub{font-size:11.5px;color:#57606a}
.tile.frozen .tile-value{color:#8c959f}
.tile.warn{border-color:#d4a72c;background:#fff8c5}
.settings{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:8px 28px}
.settings-block h3{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:#57606a;margin:0 0 4px}
.settings dl,.flat-config{margin:0;font-size:12px;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.flat-config{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:0 24px}
.setting{display:flex;gap:10px;min-width:0;border-bottom:1px dotted #e5e9ed;padding:2px 0}
.setting dt{color:#57606a;flex:0 0 auto}
.setting dd{margin:0;overflow-wrap:anywhere}
details{margin:10px 0}
summary{cursor:pointer;color:#0969da}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:4px 36px}
.artifacts{display:flex;flex-wrap:wrap;gap:18px 36px}
.artifact{margin:0;max-width:100%}
.artifact figcaption{font-weight:600;font-size:14px;margin-bottom:6px}
.artifact img{max-width:100%;height:auto}
.artifact pre{font-size:12px;background:#f6f8fa;padding:10px;max-height:420px;overflow:auto}
.artifact-table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums}
.artifact-table th,.artifact-table td{padding:2px 10px;border-bottom:1px solid #eaeef2;text-align:right}
.artifact-table th{font-weight:600;text-align:left}
.artifact-table td.bar{background:linear-gradient(90deg,#dbe7f3 var(--bar),transparent var(--bar))}
#series-filter{width:min(420px,100%);padding:5px 8px;font:inherit}
@media (max-width:640px){main{padding:18px 14px}.grid{grid-template-columns:1fr}}
${CHART_CSS}`;

/** The page's only script: the series filter, and a readout of every line's value at the step under the pointer (text set with textContent). */
const PAGE_SCRIPT = `const f=document.getElementById('series-filter');if(f)f.addEventListener('input',()=>{const q=f.value.trim().toLowerCase();for(const c of document.querySelectorAll('.series-cell'))c.hidden=q!==''&&!c.dataset.key.toLowerCase().includes(q);});
for(const plot of document.querySelectorAll('.plot[data-x0]')){const d=plot.dataset,x0=+d.x0,x1=+d.x1,y0=+d.y0,y1=+d.y1,fig=plot.closest('figure');let lines=null,tip=null,hair=null;
const load=()=>{const byKey=new Map();for(const p of plot.querySelectorAll('path.line')){if(byKey.has(p.dataset.series)&&!p.classList.contains('raw'))continue;const pts=[...p.getAttribute('d').matchAll(/[ML]([-\\d.]+) ([-\\d.]+)/g)].map((m)=>[x0+(+m[1]/1000)*(x1-x0),y1-(+m[2]/1000)*(y1-y0)]);byKey.set(p.dataset.series,{color:p.getAttribute('stroke'),pts});}
const names=new Map([...fig.querySelectorAll('.legend li[data-series]')].map((li)=>[li.dataset.series,li.textContent]));return[...byKey].map(([k,v])=>({name:names.get(k)||k,...v}));};
plot.addEventListener('mousemove',(e)=>{lines??=load();if(!tip){tip=document.createElement('div');tip.className='tip';hair=document.createElement('div');hair.className='hair';plot.append(hair,tip);}
const r=plot.getBoundingClientRect(),fx=Math.min(1,Math.max(0,(e.clientX-r.left)/r.width)),step=x0+fx*(x1-x0);let at=null;tip.replaceChildren();const head=document.createElement('b');tip.append(head);
for(const l of lines){let best=null;for(const p of l.pts)if(!best||Math.abs(p[0]-step)<Math.abs(best[0]-step))best=p;if(!best)continue;at??=best[0];const row=document.createElement('div'),sw=document.createElement('i');sw.style.background=l.color;row.append(sw,l.name+' '+Number(best[1].toPrecision(3)));tip.append(row);}
head.textContent='step '+Math.round(at??step);const px=((Math.round(at??step)-x0)/(x1-x0))*100;hair.style.left=px+'%';tip.style.left=fx>0.6?'':'calc('+px+'% + 10px)';tip.style.right=fx>0.6?'calc('+(100-px)+'% + 10px)':'';tip.hidden=hair.hidden=false;});
plot.addEventListener('mouseleave',()=>{if(tip)tip.hidden=hair.hidden=true;});}`;

/**
 * The training report as one self-contained HTML page (no network, no charting library): a
 * header with the run's key settings, steps, episodes, wall time and final metrics; full-width
 * reward-per-role charts (frozen roles named, not drawn); the env evaluator's metrics and files;
 * the env's per-role metrics; the optimiser's health; every logged series. All text escaped.
 */
export function renderReport(input: ReportInput): string {
  const { rows, config } = input;
  const xDomain = stepDomain(rows);
  const sources = [...rolesBySource(numericKeys(rows)).keys()];
  const evaluator = evaluatorCharts(rows, xDomain);
  const artifacts = (input.artifacts ?? []).map(renderArtifact);
  const roleMetrics = roleMetricCharts(rows, config, xDomain);
  const lede = [sources.join(', ') || 'no training source logged', input.runName ? `run ${input.runName}` : '']
    .filter(Boolean)
    .join(' · ');
  const section = (title: string, body: string) => (body ? `<h2>${escapeHtml(title)}</h2>${body}` : '');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Training report · ${escapeHtml(lede)}</title><style>${PAGE_CSS}</style></head>
<body><main><header><h1>Training report</h1><p class="lede">${escapeHtml(lede)}</p>${renderTiles(rows, config)}${renderSettings(config)}</header>
${section('Reward', rewardCharts(rows, config, xDomain).join(''))}
${section('Evaluator', evaluator.join('') + (artifacts.length ? `<div class="artifacts">${artifacts.join('')}</div>` : ''))}
${section('Per-role metrics', roleMetrics.length ? `<div class="grid">${roleMetrics.join('')}</div>` : '')}
${section('Optimisation', `<div class="grid">${dynamicsCharts(rows, xDomain).join('')}</div>`)}
${section('All series', everySeries(rows, config, xDomain))}
</main><script>${PAGE_SCRIPT}</script></body></html>
`;
}

/** Largest evaluator file inlined into the report. */
const ARTIFACT_LIMIT = 2 * 1024 * 1024;
const ARTIFACT_KINDS: Record<string, ReportArtifact['kind']> = { json: 'json', svg: 'svg', png: 'png' };

/** The evaluator's files of a run directory: regular files only (never a link), each read up to {@link ARTIFACT_LIMIT}. */
async function readArtifacts(out: string): Promise<ReportArtifact[]> {
  const artifacts: ReportArtifact[] = [];
  const entries = (await readdir(out, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries) {
    const kind = ARTIFACT_KINDS[entry.name.split('.').pop() ?? ''];
    if (!kind || !entry.isFile() || entry.name === 'config.json') continue;
    const handle = await open(join(out, entry.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
      () => null,
    );
    if (!handle) continue;
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) continue;
      if (stat.size > ARTIFACT_LIMIT) {
        artifacts.push({ name: entry.name, kind: 'skipped', bytes: stat.size });
        continue;
      }
      const content = await handle.readFile();
      if (kind === 'png' && content.subarray(0, 4).toString('latin1') !== '\x89PNG') continue;
      artifacts.push({ name: entry.name, kind, content, bytes: content.length });
    } finally {
      await handle.close();
    }
  }
  return artifacts;
}

/** Lines of `metrics.jsonl` that parse as objects (a torn last line is left out). */
function parseMetrics(text: string): MetricsRow[] {
  const rows: MetricsRow[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const row = JSON.parse(line) as unknown;
      if (row !== null && typeof row === 'object' && !Array.isArray(row)) rows.push(row as MetricsRow);
    } catch {
      // A torn line (a run stopped mid-write) is skipped; the rest still makes a report.
    }
  }
  return rows;
}

/** A regular file of the run directory read without following a link (null when it is missing, a link or not a file). */
async function readRunFile(path: string): Promise<string | null> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (!handle) return null;
  try {
    return (await handle.stat()).isFile() ? await handle.readFile('utf8') : null;
  } finally {
    await handle.close();
  }
}

/**
 * Writes `<out>/report.html` from `metrics.jsonl`, `config.json` and the evaluator's files in the
 * run directory (see {@link renderReport}); returns its path. Files are read as regular files
 * only, never through a link.
 */
export async function writeReport(options: { out: string }): Promise<string> {
  const metrics = await readRunFile(join(options.out, 'metrics.jsonl'));
  if (metrics === null) {
    const path = join(options.out, 'metrics.jsonl');
    throw new ConfigError(`${path}: not a regular file of the run directory`, { path });
  }
  let config: unknown = null;
  try {
    config = camelKeys(JSON.parse((await readRunFile(join(options.out, 'config.json'))) ?? 'null'));
  } catch {
    config = null;
  }
  const html = renderReport({
    rows: parseMetrics(metrics),
    config,
    artifacts: await readArtifacts(options.out),
    runName: basename(resolve(options.out)),
  });
  const path = join(options.out, 'report.html');
  await writeFile(path, html);
  return path;
}
