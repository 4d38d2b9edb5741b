import { TroupeError } from '@troupe/verifiers';

/**
 * `--resume` of an external-engine run found the trainer at another step than the orchestrator's
 * checkpoint. A resumed run continues from the orchestrator's checkpoint of step S; prime-rl's
 * trainer must resume from its own checkpoint of the same step (`--resume.step S`: it then
 * broadcasts `broadcasts/step_S` and reads `rollouts/step_<S+1>` first, `trainer/rl/train.py:217-277`
 * at 559b447), or the two would train different steps under one number. The message names both
 * steps and where the trainer's step was read.
 */
export class ResumeStepMismatchError extends TroupeError {
  /** The orchestrator's step: that of its checkpoint (`<out>/checkpoint`), or the step whose broadcast it awaits. */
  readonly orchestratorStep: number;
  /** The trainer's step: its latest checkpoint, or its newest broadcast; null when it has no checkpoint at all. */
  readonly trainerStep: number | null;

  constructor(options: { orchestratorStep: number; trainerStep: number | null; found: string; hint: string }) {
    super({
      name: 'ResumeStepMismatchError',
      message: `the orchestrator is at step ${options.orchestratorStep}, the trainer ${
        options.trainerStep === null ? 'has no checkpoint' : `at step ${options.trainerStep}`
      } (${options.found}); ${options.hint}`,
    });
    this.orchestratorStep = options.orchestratorStep;
    this.trainerStep = options.trainerStep;
  }

  /** True when `value` is a `ResumeStepMismatchError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is ResumeStepMismatchError {
    return TroupeError.isKind(value, 'ResumeStepMismatchError');
  }
}
