/** An axis of round ticks: the domain it spans (tick-aligned for a value axis) and its ticks. */
export interface NiceAxis {
  /** Lower end of the axis. */
  min: number;
  /** Upper end of the axis. */
  max: number;
  /** Distance between ticks: 1, 2 or 5 × 10^k. */
  step: number;
  /** Tick values, ascending, each a multiple of `step` within [min, max]. */
  ticks: number[];
}

/** The round step (1, 2 or 5 × 10^k, at least 1 when `integer`) nearest above `raw`. */
export function niceStep(raw: number, integer = false): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const exponent = Math.floor(Math.log10(raw));
  const base = 10 ** exponent;
  const fraction = raw / base;
  const nice = fraction <= 1 + 1e-9 ? 1 : fraction <= 2 + 1e-9 ? 2 : fraction <= 5 + 1e-9 ? 5 : 10;
  const step = nice * base;
  return integer ? Math.max(1, Math.round(step)) : step;
}

/** Decimal places that print every multiple of `step` exactly (0 for 1, 1 for 0.2, 2 for 0.05). */
export function stepDecimals(step: number): number {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

/** `value` rounded to the decimals of `step`, so that float noise (0.30000000000000004) is gone. */
function snap(value: number, step: number): number {
  const snapped = Number(value.toFixed(stepDecimals(step)));
  return Object.is(snapped, -0) ? 0 : snapped;
}

/**
 * A value axis over data in [min, max]: about `count` round ticks, the domain widened to the
 * ticks below and above the data (so the plot starts and ends on a grid line). A flat series
 * gets a band around its value.
 */
export function valueAxis(options: { min: number; max: number; count?: number }): NiceAxis {
  let { min, max } = options;
  if (!Number.isFinite(min) || !Number.isFinite(max)) return { min: 0, max: 1, step: 0.2, ticks: [0, 0.2, 0.4, 0.6, 0.8, 1] };
  if (max - min <= Math.abs(max) * 1e-12) {
    const half = Math.abs(min) > 0 ? Math.abs(min) * 0.1 : 0.5;
    min -= half;
    max += half;
  }
  const step = niceStep((max - min) / Math.max(1, (options.count ?? 5) - 1));
  const low = snap(Math.floor(min / step + 1e-9) * step, step);
  const high = snap(Math.ceil(max / step - 1e-9) * step, step);
  const ticks: number[] = [];
  for (let i = 0; low + i * step <= high + step * 1e-6; i++) ticks.push(snap(low + i * step, step));
  return { min: low, max: high, step, ticks };
}

/**
 * A step axis over [min, max] kept as it is (the run's first to last step): about `count`
 * integer ticks at round multiples inside it.
 */
export function stepAxis(options: { min: number; max: number; count?: number }): NiceAxis {
  let { min, max } = options;
  if (!(max > min)) {
    min -= 1;
    max += 1;
  }
  const step = niceStep((max - min) / Math.max(1, (options.count ?? 8) - 1), true);
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max; t += step) ticks.push(t);
  return { min, max, step, ticks };
}

/**
 * A tick label: the value with just the decimals it needs ("0", "0.2", "40", never "1.000",
 * "40.0" or "0.30000000000000004"); axes stepping by thousands or millions read "10k", "2M", and
 * values below 10^-4 on axes stepping below 10^-4 read "2e-9".
 */
export function formatTick(value: number, step: number): string {
  const v = snap(value, step);
  if (v === 0) return '0';
  for (const [scale, suffix] of [
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const)
    if (step >= scale) return `${snap(v / scale, step / scale)}${suffix}`;
  if (step < 1e-4 && Math.abs(v) < 1e-4) {
    const exponent = Math.floor(Math.log10(step) + 1e-9);
    return `${snap(v / 10 ** exponent, step / 10 ** exponent)}e${exponent}`;
  }
  return String(v);
}
