import { h, s } from './dom.ts';
import { fmt } from './format.ts';

/** A reward histogram as returned in the run index (equal-width bins over [min, max]). */
export interface HistogramData {
  min: number;
  max: number;
  counts: number[];
}

/** Bars of a reward histogram with its axis labels. */
export function histogramSvg(hist: HistogramData, color: string): HTMLElement {
  const width = 300;
  const height = 56;
  const max = Math.max(1, ...hist.counts);
  const n = hist.counts.length;
  const barW = width / n;
  const svg = s('svg', {
    class: 'hist',
    viewBox: `0 0 ${width} ${height + 1}`,
    preserveAspectRatio: 'none',
    role: 'img',
    'aria-label': 'reward histogram',
  });
  hist.counts.forEach((c, i) => {
    const lo = hist.min + ((hist.max - hist.min) * i) / n;
    const hi = hist.min + ((hist.max - hist.min) * (i + 1)) / n;
    const barH = c ? Math.max(2, (c / max) * (height - 2)) : 0;
    const rect = s('rect', {
      x: i * barW + 1.5,
      y: height - barH,
      width: Math.max(1, barW - 3),
      height: barH,
      rx: 2,
      fill: color,
    });
    rect.append(s('title', {}, document.createTextNode(`${fmt.num(lo)} – ${fmt.num(hi)}: ${c}`)));
    svg.append(rect);
  });
  svg.append(s('line', { x1: 0, x2: width, y1: height + 0.5, y2: height + 0.5, class: 'axis' }));
  return h(
    'div',
    { class: 'hist-wrap' },
    svg,
    h(
      'div',
      { class: 'hist-axis' },
      h('span', { text: fmt.num(hist.min) }),
      h('span', { class: 'muted', text: 'reward distribution' }),
      h('span', { text: fmt.num(hist.max) }),
    ),
  );
}
