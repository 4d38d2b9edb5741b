import { describe, expect, it } from 'vitest';
import { scheduledBeta1, scheduledLr, scheduledRefKlTau, type TrainerSchedule } from './schedule.ts';

const schedule = (overrides: Partial<TrainerSchedule>): TrainerSchedule => ({
  maxSteps: 11,
  lr: 1e-2,
  lrFinalFraction: 0.1,
  lrDecayFraction: 1,
  momentumAtFloor: null,
  refKlTauStart: null,
  refKlTau: 0.05,
  refKlDecayFraction: 0.2,
  ...overrides,
});

describe('trainer schedules', () => {
  it('decays the learning rate (cosine) from lr to lr × lrFinalFraction over the first lrDecayFraction of the steps', () => {
    const s = schedule({});
    expect(scheduledLr(s, 0)).toBeCloseTo(1e-2, 10);
    expect(scheduledLr(s, 5)).toBeCloseTo(5.5e-3, 10);
    expect(scheduledLr(s, 10)).toBeCloseTo(1e-3, 10);
    const early = schedule({ maxSteps: 21, lrDecayFraction: 0.5 });
    expect(scheduledLr(early, 5)).toBeCloseTo(5.5e-3, 10);
    expect(scheduledLr(early, 10)).toBeCloseTo(1e-3, 10);
    expect(scheduledLr(early, 20)).toBeCloseTo(1e-3, 10);
  });

  it('switches Adam β1 to momentumAtFloor once the learning rate is at its floor (and leaves it alone by default)', () => {
    const s = schedule({ lrDecayFraction: 0.5, momentumAtFloor: 0.9 });
    expect(scheduledBeta1(s, 4)).toBeUndefined();
    expect(scheduledBeta1(s, 5)).toBe(0.9);
    expect(scheduledBeta1(schedule({}), 10)).toBeUndefined();
  });

  it('decays refKlTau from refKlTauStart to refKlTau over the first refKlDecayFraction of the steps, then holds it', () => {
    const s = schedule({ maxSteps: 101, refKlTauStart: 0.5 });
    expect(scheduledRefKlTau(s, 0)).toBeCloseTo(0.5, 10);
    expect(scheduledRefKlTau(s, 10)).toBeCloseTo(0.275, 10);
    expect(scheduledRefKlTau(s, 20)).toBeCloseTo(0.05, 10);
    expect(scheduledRefKlTau(s, 80)).toBeCloseTo(0.05, 10);
    expect(scheduledRefKlTau(schedule({ refKlTau: 0.07 }), 0)).toBe(0.07);
  });
});
