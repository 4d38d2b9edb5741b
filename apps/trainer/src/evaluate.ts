/** A mean with the half-width of its 95% confidence interval. */
export interface SeatResult {
  mean: number;
  /** Half-width of the 95% confidence interval (1.96·sd/√n). */
  ci95: number;
}

/** Mean and the half-width of its 95% confidence interval (1.96·sd/√n, sample sd). */
export function summarize(values: readonly number[]): SeatResult {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(n - 1, 1);
  return { mean, ci95: (1.96 * Math.sqrt(variance)) / Math.sqrt(n) };
}
