import { formatTick, type NiceAxis, stepAxis, valueAxis } from './report-ticks.ts';

/** One line of a chart: (step, value) points in step order. */
export interface ChartSeries {
  /** Stable id (a metric key), written as `data-series`. */
  key: string;
  /** Legend text. */
  label: string;
  /** Stroke colour (from {@link seriesStyle}, never from data). */
  color: string;
  /** SVG dash pattern, for series past the palette. */
  dash?: string;
  points: readonly (readonly [number, number])[];
}

/** What {@link renderChart} draws. */
export interface ChartOptions {
  /** Written as `data-chart`. */
  id: string;
  title: string;
  subtitle?: string;
  /** The step range every chart of a report shares. */
  xDomain: readonly [number, number];
  series: readonly ChartSeries[];
  /** Legend-only entries: roles that were not trained (named, never drawn). */
  frozen?: readonly string[];
  /** `wide`: a headline chart; `small`: a cell of a grid. */
  size?: 'wide' | 'small';
  /** Noisy per-step statistics: past {@link SMOOTH_FROM} points each line is drawn faint, with its moving average over it. */
  smooth?: boolean;
}

/** Fewest points a smoothed chart draws a moving average for. */
export const SMOOTH_FROM = 30;

/** The odd moving-average window for `count` points: about a 25th of the run, at least 3. */
export function smoothingWindow(count: number): number {
  const window = Math.max(3, Math.round(count / 25));
  return window % 2 ? window : window + 1;
}

/** The centred moving average of `points` over `window` points (narrower at the ends, so it neither lags nor overshoots the run). */
export function movingAverage(points: readonly (readonly [number, number])[], window: number): [number, number][] {
  const half = Math.floor(window / 2);
  return points.map((p, i) => {
    const from = Math.max(0, i - half);
    const to = Math.min(points.length, i + half + 1);
    let sum = 0;
    for (let j = from; j < to; j++) sum += (points[j] as readonly [number, number])[1];
    return [p[0], sum / (to - from)];
  });
}

/** Tableau 10: distinct, colour-blind-friendlier than the browser defaults, legible on white. */
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const DASHES = ['', '6 4', '2 3', '8 3 2 3'];

/** The colour and dash of the `index`-th series of a chart: the palette, then the palette dashed. */
export function seriesStyle(index: number): { color: string; dash?: string } {
  const color = PALETTE[index % PALETTE.length] as string;
  const dash = DASHES[Math.floor(index / PALETTE.length) % DASHES.length] as string;
  return dash ? { color, dash } : { color };
}

/** Text and attribute values into HTML: `& < > " '` escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Most points a drawn line keeps: longer series keep each bucket's lowest and highest point. */
const MAX_POINTS = 2000;

/** `points` thinned to at most about {@link MAX_POINTS}, keeping every bucket's extremes (spikes stay visible). */
export function thinPoints(points: readonly (readonly [number, number])[]): (readonly [number, number])[] {
  if (points.length <= MAX_POINTS) return [...points];
  const buckets = MAX_POINTS / 2;
  const size = points.length / buckets;
  const kept: (readonly [number, number])[] = [];
  for (let b = 0; b < buckets; b++) {
    const slice = points.slice(Math.floor(b * size), Math.floor((b + 1) * size));
    if (slice.length === 0) continue;
    let low = slice[0] as readonly [number, number];
    let high = low;
    for (const p of slice) {
      if (p[1] < low[1]) low = p;
      if (p[1] > high[1]) high = p;
    }
    if (low === high) kept.push(low);
    else kept.push(...(low[0] <= high[0] ? [low, high] : [high, low]));
  }
  return kept;
}

/** Most points a sparse series marks one by one. */
const MAX_MARKS = 80;

/** The plot's own coordinate space; the SVG stretches it to the box (strokes do not scale). */
const W = 1000;
const H = 1000;

function chartHead(title: string, subtitle: string): string {
  return `<figcaption><span class="chart-title">${escapeHtml(title)}</span>${
    subtitle ? ` <span class="chart-subtitle">${escapeHtml(subtitle)}</span>` : ''
  }</figcaption>`;
}

/** The legend below the plot: a swatch per drawn series, then the frozen roles (named, no swatch colour). */
function chartLegend(drawn: readonly ChartSeries[], frozen: readonly string[]): string {
  const items = [
    ...drawn.map(
      (s) =>
        `<li data-series="${escapeHtml(s.key)}"><span class="swatch" style="border-top-color:${s.color};border-top-style:${s.dash ? 'dashed' : 'solid'}"></span>${escapeHtml(s.label)}</li>`,
    ),
    ...frozen.map(
      (role) =>
        `<li class="frozen" data-frozen="${escapeHtml(role)}"><span class="swatch"></span>${escapeHtml(role)} <em>frozen, not trained: no curve</em></li>`,
    ),
  ];
  return items.length ? `<ul class="legend">${items.join('')}</ul>` : '';
}

/** The tick labels of both axes, placed by percentage of the plot box. */
function tickLabels(y: NiceAxis, x: NiceAxis): { yTicks: string; xTicks: string } {
  const yTicks = y.ticks
    .map((t) => `<span style="top:${(((y.max - t) / (y.max - y.min)) * 100).toFixed(2)}%">${formatTick(t, y.step)}</span>`)
    .join('');
  const xTicks = x.ticks
    .map(
      (t, i) =>
        `<span${i % 2 ? ' class="odd"' : ''} style="left:${(((t - x.min) / (x.max - x.min)) * 100).toFixed(2)}%">${formatTick(t, x.step)}</span>`,
    )
    .join('');
  return { yTicks, xTicks };
}

/**
 * A line chart as HTML and inline SVG that fills its container's width at any viewport, with no
 * script: the lines live in a stretched SVG (non-scaling strokes), tick labels and the legend are
 * HTML around it, so text never scales and the legend sits below the plot, never over a line.
 * Ticks are round numbers (steps are integers). Every string is escaped.
 */
export function renderChart(options: ChartOptions): string {
  const drawn = options.series
    .map((s) => ({ ...s, points: thinPoints(s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]))) }))
    .filter((s) => s.points.length > 0);
  const size = options.size ?? 'wide';
  const open = `<figure class="chart ${size}" data-chart="${escapeHtml(options.id)}">`;
  const legend = chartLegend(drawn, options.frozen ?? []);
  if (drawn.length === 0)
    return `${open}${chartHead(options.title, options.subtitle ?? '')}<p class="no-data">no data</p>${legend}</figure>`;
  const values = drawn.flatMap((s) => s.points.map((p) => p[1]));
  const y = valueAxis({ min: Math.min(...values), max: Math.max(...values), count: size === 'small' ? 4 : 6 });
  const x = stepAxis({ min: options.xDomain[0], max: options.xDomain[1], count: size === 'small' ? 6 : 11 });
  const sx = (v: number) => (((v - x.min) / (x.max - x.min)) * W).toFixed(1);
  const sy = (v: number) => (H - ((v - y.min) / (y.max - y.min)) * H).toFixed(1);
  const longest = Math.max(...drawn.map((s) => s.points.length));
  const window = options.smooth && longest >= SMOOTH_FROM ? smoothingWindow(longest) : 0;
  const path = (s: ChartSeries, points: readonly (readonly [number, number])[], kind: string) => {
    const d = points.map((p, i) => `${i ? 'L' : 'M'}${sx(p[0])} ${sy(p[1])}`).join('');
    const single = points.length === 1 ? 'l0 0' : '';
    return `<path class="line${kind}${single ? ' dot' : ''}" data-series="${escapeHtml(s.key)}" d="${d}${single}" stroke="${s.color}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`;
  };
  // Smoothed: every faint per-step line first, then the averages over them.
  const lines = window
    ? drawn.map((s) => path(s, s.points, ' raw')).join('') +
      drawn.map((s) => path(s, movingAverage(s.points, window), ' smooth')).join('')
    : drawn.map((s) => path(s, s.points, '')).join('');
  // A series logged at some steps only (an evaluator every few steps) marks each point it has.
  const steps = x.max - x.min + 1;
  const marks = drawn
    .filter((s) => s.points.length > 1 && s.points.length <= MAX_MARKS && s.points.length < steps / 2)
    .map(
      (s) =>
        `<path class="marks" data-series="${escapeHtml(s.key)}" d="${s.points.map((p) => `M${sx(p[0])} ${sy(p[1])}l0 0`).join('')}" stroke="${s.color}"/>`,
    )
    .join('');
  const paths = lines + marks;
  const grid =
    y.ticks.map((t) => `<line x1="0" x2="${W}" y1="${sy(t)}" y2="${sy(t)}"/>`).join('') +
    x.ticks.map((t) => `<line x1="${sx(t)}" x2="${sx(t)}" y1="0" y2="${H}"/>`).join('');
  const smoothing =
    size === 'small' ? `averaged over ${window} steps` : `faint: each step · bold: moving average of ${window} steps`;
  const subtitle = [options.subtitle, window ? smoothing : ''].filter(Boolean).join(' · ');
  const { yTicks, xTicks } = tickLabels(y, x);
  return `${open}${chartHead(options.title, subtitle)}<div class="frame"><div class="y-ticks">${yTicks}</div><div class="plot" data-x0="${x.min}" data-x1="${x.max}" data-y0="${y.min}" data-y1="${y.max}"><svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" aria-hidden="true"><g class="grid">${grid}</g>${paths}</svg></div><div class="x-ticks">${xTicks}</div><div class="x-title">step</div></div>${legend}</figure>`;
}

/** The charts' stylesheet (the frame's grid, ticks, legend). */
export const CHART_CSS = `
.chart{margin:0 0 28px;min-width:0}
.chart figcaption{margin:0 0 6px;font-size:15px}
.chart-title{font-weight:600}
.chart-subtitle{color:#57606a;font-size:13px;margin-left:6px}
.frame{display:grid;grid-template-columns:52px minmax(0,1fr);grid-template-rows:var(--plot-height,300px) 20px 16px;padding:8px 18px 0 0}
.chart.small .frame{--plot-height:170px}
.y-ticks{grid-row:1;grid-column:1;position:relative}
.y-ticks span{position:absolute;right:8px;transform:translateY(-50%);font-size:11px;color:#57606a;font-variant-numeric:tabular-nums;white-space:nowrap}
.plot{grid-row:1;grid-column:2;position:relative;border-left:1px solid #8c959f;border-bottom:1px solid #8c959f}
.plot svg{position:absolute;inset:0;width:100%;height:100%;overflow:visible}
.plot .grid line{stroke:#eaeef2;stroke-width:1;vector-effect:non-scaling-stroke}
.plot path.line{fill:none;stroke-width:1.8;stroke-linejoin:round;stroke-linecap:round;vector-effect:non-scaling-stroke}
.plot path.dot{stroke-width:6}
.plot path.marks{fill:none;stroke-width:5;stroke-linecap:round;vector-effect:non-scaling-stroke}
.plot path.raw{stroke-width:1;stroke-opacity:.3}
.plot path.smooth{stroke-width:2.2}
.x-ticks{grid-row:2;grid-column:2;position:relative}
.x-ticks span{position:absolute;top:4px;transform:translateX(-50%);font-size:11px;color:#57606a;font-variant-numeric:tabular-nums;white-space:nowrap}
.x-title{grid-row:3;grid-column:2;text-align:center;font-size:11px;color:#57606a}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 18px;margin:8px 0 0 52px;padding:0;font-size:12.5px}
.legend li{display:flex;align-items:center;gap:6px}
.legend .swatch{display:inline-block;width:22px;height:0;border-top:3px solid}
.legend li.frozen{color:#57606a}
.legend li.frozen .swatch{border-top:3px dotted #bbb}
.legend em{font-style:normal;font-size:11.5px}
.plot .hair{position:absolute;top:0;bottom:0;width:0;border-left:1px dashed #8c959f;pointer-events:none}
.plot .tip{position:absolute;top:4px;z-index:2;background:rgba(255,255,255,.96);border:1px solid #d0d7de;border-radius:6px;padding:4px 8px;font-size:12px;pointer-events:none;white-space:nowrap;box-shadow:0 2px 6px rgba(0,0,0,.08)}
.plot .tip b{display:block;font-weight:600}
.plot .tip i{display:inline-block;width:10px;height:3px;margin-right:6px;vertical-align:middle}
.no-data{color:#57606a;font-size:13px}
@media (max-width:640px){.x-ticks span.odd{display:none}}
`;
