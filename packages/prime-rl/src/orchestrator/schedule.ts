import type { StepOptions } from '../trainer/config.ts';

/** A learning-rate / reference-KL / β1 schedule over a run of `maxSteps` steps. */
export interface TrainerSchedule {
  maxSteps: number;
  lr: number;
  /** The lr falls (cosine) to `lr × lrFinalFraction`… */
  lrFinalFraction: number;
  /** …over the first `lrDecayFraction` of the steps, then stays. */
  lrDecayFraction: number;
  /** Adam's β1 once the lr is at its floor (null: unchanged). */
  momentumAtFloor: number | null;
  /** Reference-KL weight at step 0 (null: `refKlTau` throughout). */
  refKlTauStart: number | null;
  refKlTau: number;
  refKlDecayFraction: number;
}

/** The learning rate of step `step` (0-based): cosine from `lr` to `lr × lrFinalFraction` over the first `lrDecayFraction` of the run, then constant. */
export function scheduledLr(schedule: TrainerSchedule, step: number): number {
  const progress = Math.min(1, step / Math.max(1, lrFloorStep(schedule)));
  const floor = schedule.lrFinalFraction;
  return schedule.lr * (floor + ((1 - floor) * (1 + Math.cos(Math.PI * progress))) / 2);
}

/** Adam's β1 of step `step` (0-based): `momentumAtFloor` once the lr has reached its floor, else undefined. */
export function scheduledBeta1(schedule: TrainerSchedule, step: number): number | undefined {
  if (schedule.momentumAtFloor === null) return undefined;
  return step >= lrFloorStep(schedule) ? schedule.momentumAtFloor : undefined;
}

function lrFloorStep(schedule: TrainerSchedule): number {
  return (schedule.maxSteps - 1) * schedule.lrDecayFraction;
}

/** The reference-KL weight of step `step` (0-based): cosine from `refKlTauStart` to `refKlTau` over the first `refKlDecayFraction` of the run. */
export function scheduledRefKlTau(schedule: TrainerSchedule, step: number): number {
  const end = schedule.refKlTau;
  if (schedule.refKlTauStart === null) return end;
  const progress = Math.min(1, step / Math.max(1, (schedule.maxSteps - 1) * schedule.refKlDecayFraction));
  return end + ((schedule.refKlTauStart - end) * (1 + Math.cos(Math.PI * progress))) / 2;
}

/** The per-step trainer overrides of step `step` (0-based). */
export function scheduledStepOptions(schedule: TrainerSchedule, step: number): StepOptions {
  const beta1 = scheduledBeta1(schedule, step);
  return {
    lr: scheduledLr(schedule, step),
    refKlTau: scheduledRefKlTau(schedule, step),
    ...(beta1 !== undefined ? { beta1 } : {}),
  };
}
