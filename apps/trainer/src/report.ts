import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KUHN_INFO_SETS, type KuhnPolicyTable, kuhnEquilibrium } from '@troupe/verifiers';

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
    const x = r.hands;
    const y = r[key];
    if (typeof x === 'number' && typeof y === 'number' && Number.isFinite(y)) points.push([x, y]);
  }
  return { name, color, points };
}

/** Writes `<out>/report.html` from `metrics.jsonl` and the policy tables: self-contained, inline SVG. */
export async function writeReport(options: { out: string }): Promise<string> {
  const text = await readFile(join(options.out, 'metrics.jsonl'), 'utf8');
  const rows = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
  const read = async (name: string) => {
    try {
      return JSON.parse(await readFile(join(options.out, name), 'utf8')) as KuhnPolicyTable;
    } catch {
      return null;
    }
  };
  const table = await read('policy-table.json');
  const average = await read('policy-table-average.json');
  const last = rows.at(-1) ?? {};
  const eq = kuhnEquilibrium(1 / 6);
  const tableHtml = `<table><tr><th>info set</th><th>P(bet/call) last</th><th>average</th><th>equilibrium (α=1/6; J, K, Qpb depend on α)</th></tr>${KUHN_INFO_SETS.map(
    (k) =>
      `<tr><td>${k}</td><td>${table ? table[k][1].toFixed(3) : '–'}</td><td>${average ? average[k][1].toFixed(3) : '–'}</td><td>${eq[k][1].toFixed(3)}</td></tr>`,
  ).join('')}</table>`;
  const roleKeys = Object.keys(last).filter((k) => /reward\/mean$/.test(k));
  const charts = [
    svgChart({
      title: 'NashConv (exact)',
      xLabel: 'hands',
      yMin: 0,
      series: [
        series(rows, 'nash_conv', 'last iterate', COLORS[0] as string),
        series(rows, 'nash_conv_average', 'average policy', COLORS[1] as string),
      ],
    }),
    svgChart({
      title: 'Reward per role',
      xLabel: 'hands',
      series: roleKeys.map((k, i) => series(rows, k, k, COLORS[i % COLORS.length] as string)),
    }),
    svgChart({
      title: 'Forfeit rate',
      xLabel: 'hands',
      yMin: 0,
      series: [series(rows, 'forfeit_rate', 'hands ending in a forfeit', COLORS[0] as string)],
    }),
    svgChart({
      title: 'Entropy and KL',
      xLabel: 'hands',
      yMin: 0,
      series: [
        series(rows, 'entropy', 'entropy', COLORS[2] as string),
        series(rows, 'ref_kl', 'KL to reference', COLORS[3] as string),
        series(rows, 'mismatch_kl', 'mismatch KL', COLORS[4] as string),
      ],
    }),
    svgChart({
      title: 'Player 0 payoff per hand (equilibrium −1/18)',
      xLabel: 'hands',
      series: [
        series(rows, 'player0_payoff', 'sampled', COLORS[0] as string),
        series(rows, 'game_value', 'exact, policy table', COLORS[1] as string),
      ],
    }),
  ];
  const summary = `steps ${last.step ?? 0}, hands ${last.hands ?? 0}, NashConv ${typeof last.nash_conv === 'number' ? last.nash_conv.toFixed(4) : '–'} (average policy ${typeof last.nash_conv_average === 'number' ? last.nash_conv_average.toFixed(4) : '–'}), ${typeof last.elapsed_s === 'number' ? last.elapsed_s.toFixed(0) : '?'} s`;
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>troupe training report</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#111}svg{margin:8px;border:1px solid #eee}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;font-size:13px}</style></head>
<body><h1>Kuhn poker self-play</h1><p id="summary">${esc(summary)}</p><div>${charts.join('\n')}</div><h2>Policy table</h2>${tableHtml}</body></html>
`;
  const path = join(options.out, 'report.html');
  await writeFile(path, html);
  return path;
}
