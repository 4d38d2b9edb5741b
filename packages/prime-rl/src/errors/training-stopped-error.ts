import { TroupeError } from '@troupe/verifiers';

/**
 * A training run stopped because it has nothing to train on: every episode of the run's first
 * step failed, or of `stop_after_failed_steps` steps in a row (each a step's groups, collected
 * again when all failed; none reaches the trainer) — {@link TrainingStoppedError.failedSteps}
 * words that message, naming the step, the first error (source, role, stage, and the user's own
 * stack when a wrapper error carries it) and the endpoints the run calls. The checkpoint written
 * before, if any, is kept. `troupe train` exits 4.
 */
export class TrainingStoppedError extends TroupeError {
  /** The step no collection could fill (its metrics line and checkpoint are not written). */
  readonly step: number;
  /** Steps in a row that gave nothing to train on. */
  readonly consecutive: number;
  /** The endpoints the run's roles call (policy servers, frozen models). */
  readonly endpoints: readonly string[];

  constructor(options: { step: number; consecutive: number; endpoints: readonly string[]; message: string; cause?: unknown }) {
    super({ name: 'TrainingStoppedError', message: options.message, cause: options.cause });
    this.step = options.step;
    this.consecutive = options.consecutive;
    this.endpoints = options.endpoints;
  }

  /** The stop of a run whose steps failed whole (see the class). */
  static failedSteps(options: {
    step: number;
    consecutive: number;
    /** Whether it was the run's first step (of this process: a resumed run's first too). */
    first: boolean;
    /** Episodes of the last collection of the step. */
    failed: number;
    /** "first error (source …, role …, stage …): Type: message", or null. */
    firstError: string | null;
    /** The user's own error's stack, when a wrapper error carried it as its cause. */
    causeStack?: string | null;
    endpoints: readonly string[];
  }): TrainingStoppedError {
    const span = options.first
      ? `the run's first step (step ${options.step})`
      : `${options.consecutive} steps in a row (stop_after_failed_steps; step ${options.step})`;
    const endpoints = options.endpoints.length ? `; endpoints: ${options.endpoints.join(', ')}` : '';
    const caused = options.causeStack ? `\n  caused by ${options.causeStack}` : '';
    return new TrainingStoppedError({
      step: options.step,
      consecutive: options.consecutive,
      endpoints: options.endpoints,
      message: `every episode of ${span} failed (${options.failed} episodes); ${options.firstError ?? 'no error was recorded'}${endpoints}${caused}`,
    });
  }

  /** True when `value` is a `TrainingStoppedError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is TrainingStoppedError {
    return TroupeError.isKind(value, 'TrainingStoppedError');
  }
}
