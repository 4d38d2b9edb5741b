import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

type Row = Record<string, number | string | null>;

interface Series {
  name: string;
  color: string;
  points: [number, number][];
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];

/** A line chart as inline SVG (no scripts, no external assets). */
export function svgChart(options: { title: string; xLabel: string; series: Series[]; yMin?: number; yMax?: number }): string {
  const w = 560;
  const h = 260;
  const pad = { l: 52, r: 12, t: 28, b: 36 };
  const all = options.series.flatMap((s) => s.points);
  if (all.length === 0) return `<svg width="${w}" height="${h}"><text x="10" y="20">${esc(options.title)}: no data</text></svg>`;
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs, x0 + 1);
  const y0 = options.yMin ?? Math.min(...ys);
  const y1 = Math.max(options.yMax ?? Math.max(...ys), y0 + 1e-9);
  const sx = (x: number) => pad.l + ((x - x0) / (x1 - x0)) * (w - pad.l - pad.r);
  const sy = (y: number) => h - pad.b - ((Math.min(Math.max(y, y0), y1) - y0) / (y1 - y0)) * (h - pad.t - pad.b);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => y0 + f * (y1 - y0));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" role="img" aria-label="${esc(options.title)}">`,
    `<text x="${pad.l}" y="18" font-size="14" font-weight="600">${esc(options.title)}</text>`,
    `<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#999"/>`,
    `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${h - pad.b}" stroke="#999"/>`,
    ...ticks.map(
      (t) =>
        `<text x="${pad.l - 6}" y="${sy(t) + 4}" font-size="10" text-anchor="end">${fmt(t)}</text><line x1="${pad.l}" y1="${sy(t)}" x2="${w - pad.r}" y2="${sy(t)}" stroke="#eee"/>`,
    ),
    `<text x="${pad.l}" y="${h - 8}" font-size="10">${fmt(x0)}</text><text x="${w - pad.r}" y="${h - 8}" font-size="10" text-anchor="end">${fmt(x1)} ${esc(options.xLabel)}</text>`,
  ];
  options.series.forEach((s, i) => {
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"/>`);
    parts.push(
      `<text x="${w - pad.r - 4}" y="${pad.t + 12 + i * 13}" font-size="11" text-anchor="end" fill="${s.color}">${esc(s.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('');
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function fmt(x: number): string {
  return Math.abs(x) >= 1000 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(3);
}

function series(rows: Row[], key: string, name: string, color: string): Series {
  const points: [number, number][] = [];
  for (const r of rows) {
    const x = r.step;
    const y = r[key];
    if (typeof x === 'number' && typeof y === 'number' && Number.isFinite(y)) points.push([x, y]);
  }
  return { name, color, points };
}

/** Numeric series of the rows, in first-seen order (`step` excluded). */
export function seriesKeys(rows: readonly Row[]): string[] {
  const keys = new Set<string>();
  for (const r of rows) for (const [k, v] of Object.entries(r)) if (k !== 'step' && typeof v === 'number') keys.add(k);
  return [...keys];
}

/**
 * Writes `<out>/report.html` from `metrics.jsonl`: headline charts (reward per source and role,
 * every evaluator metric), then one chart per metric series, picked in the page; the
 * evaluators' JSON artifacts (e.g. a policy table) are shown as they are. Self-contained.
 */
export async function writeReport(options: { out: string }): Promise<string> {
  const text = await readFile(join(options.out, 'metrics.jsonl'), 'utf8');
  const rows = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
  const keys = seriesKeys(rows);
  const last = rows.at(-1) ?? {};
  const color = (i: number) => COLORS[i % COLORS.length] as string;
  const rewardKeys = keys.filter((k) => /^train\/.+\/reward\/mean$/.test(k));
  const evalKeys = keys.filter((k) => k.startsWith('eval/'));
  const headline = [
    svgChart({
      title: 'Reward per source and role',
      xLabel: 'steps',
      series: rewardKeys.map((k, i) => series(rows, k, k, color(i))),
    }),
    ...evalKeys.map((k) => svgChart({ title: k, xLabel: 'steps', series: [series(rows, k, k, color(0))] })),
  ];
  const all = keys.map(
    (k, i) =>
      `<div class="series" data-key="${esc(k)}">${svgChart({ title: k, xLabel: 'steps', series: [series(rows, k, k, color(i))] })}</div>`,
  );
  const artifacts: string[] = [];
  for (const name of (await readdir(options.out)).filter((f) => f.endsWith('.json') && f !== 'config.json').sort()) {
    artifacts.push(`<h3>${esc(name)}</h3><pre>${esc(await readFile(join(options.out, name), 'utf8'))}</pre>`);
  }
  const headlineNumbers = evalKeys
    .map((k) => (typeof last[k] === 'number' ? `${k} ${(last[k] as number).toFixed(4)}` : null))
    .filter(Boolean)
    .join(', ');
  const summary = `steps ${last.step ?? 0}, episodes ${last.episodes ?? 0}${headlineNumbers ? `, ${headlineNumbers}` : ''}, ${typeof last['time/elapsed'] === 'number' ? last['time/elapsed'].toFixed(0) : '?'} s`;
  const options_ = keys.map((k) => `<option value="${esc(k)}">${esc(k)}</option>`).join('');
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>troupe training report</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#111}svg{margin:8px;border:1px solid #eee}pre{font-size:12px;background:#f7f7f7;padding:8px}select{min-width:420px}</style></head>
<body><h1>Training report</h1><p id="summary">${esc(summary)}</p><div>${headline.join('\n')}</div>
<h2>Every series</h2><p><select id="pick" multiple size="8"><option value="*" selected>all series</option>${options_}</select></p>
<div id="all">${all.join('\n')}</div><h2>Evaluator artifacts</h2>${artifacts.join('\n') || '<p>none</p>'}
<script>const pick=document.getElementById('pick');pick.addEventListener('change',()=>{const chosen=[...pick.selectedOptions].map(o=>o.value);for(const d of document.querySelectorAll('.series'))d.style.display=chosen.includes('*')||chosen.includes(d.dataset.key)?'':'none';});</script>
</body></html>
`;
  const path = join(options.out, 'report.html');
  await writeFile(path, html);
  return path;
}
