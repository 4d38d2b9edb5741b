import { describe, expect, it } from 'vitest';
import { formatTick, niceStep, stepAxis, valueAxis } from './report-ticks.ts';

const labels = (axis: { ticks: number[]; step: number }) => axis.ticks.map((t) => formatTick(t, axis.step));

describe('valueAxis', () => {
  it('covers [0, 0.93] with ticks 0, 0.2 … 1 that read as written', () => {
    const axis = valueAxis({ min: 0, max: 0.93, count: 6 });
    expect(axis.ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(labels(axis)).toEqual(['0', '0.2', '0.4', '0.6', '0.8', '1']);
    expect([axis.min, axis.max]).toEqual([0, 1]);
  });

  it('gives distinct labels to a narrow band around 48 (never "48.0 48.0 48.0")', () => {
    const axis = valueAxis({ min: 47.93, max: 48.04, count: 6 });
    const text = labels(axis);
    expect(new Set(text).size).toBe(text.length);
    expect(text).toEqual(['47.9', '47.95', '48', '48.05']);
  });

  it('widens a flat series to a band around its value', () => {
    const axis = valueAxis({ min: 0, max: 0 });
    expect(axis.min).toBeLessThan(0);
    expect(axis.max).toBeGreaterThan(0);
    expect(labels(axis)).toContain('0');
  });

  it('prints negative and tiny steps without float noise', () => {
    expect(labels(valueAxis({ min: -0.33, max: 0.31, count: 5 }))).toEqual(['-0.4', '-0.2', '0', '0.2', '0.4']);
    expect(labels(valueAxis({ min: 0, max: 3e-9, count: 4 }))).toEqual(['0', '1e-9', '2e-9', '3e-9']);
    // A flat learning rate: a band around it, in decimals (not "10e-4").
    expect(labels(valueAxis({ min: 0.001, max: 0.001, count: 4 }))).toEqual(['0.0009', '0.001', '0.0011']);
  });
});

describe('stepAxis', () => {
  it('puts integer ticks at round multiples inside the run’s steps', () => {
    expect(stepAxis({ min: 1, max: 40, count: 9 }).ticks).toEqual([5, 10, 15, 20, 25, 30, 35, 40]);
    expect(stepAxis({ min: 1, max: 2 }).ticks).toEqual([1, 2]);
    expect(labels(stepAxis({ min: 1, max: 40_000 }))).toEqual(['10k', '20k', '30k', '40k']);
  });

  it('never steps by a fraction of a step', () => {
    expect(niceStep(0.3, true)).toBe(1);
    expect(stepAxis({ min: 3, max: 3 }).ticks).toEqual([2, 3, 4]);
  });
});

describe('niceStep', () => {
  it('rounds up to 1, 2 or 5 × 10^k', () => {
    expect([0.13, 0.3, 0.7, 3, 40, 0.04].map((x) => niceStep(x))).toEqual([0.2, 0.5, 1, 5, 50, 0.05]);
  });
});
