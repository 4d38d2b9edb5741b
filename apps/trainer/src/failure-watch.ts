import type { Episode } from '@troupe/verifiers';
import { TroupeError } from '@troupe/verifiers';

/** The run was interrupted (SIGINT / SIGTERM) at a step boundary; the last checkpoint is kept. */
export class TrainingInterruptedError extends TroupeError {
  constructor(
    message: string,
    /** The last step whose metrics line was written. */
    readonly step: number,
  ) {
    super({ name: 'TrainingInterruptedError', message });
  }

  /** True when `value` is a `TrainingInterruptedError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is TrainingInterruptedError {
    return TroupeError.isKind(value, 'TrainingInterruptedError');
  }
}

/**
 * Counts the run's failed episodes as they finish (every rollout's, those rolled again included),
 * for exit code 3. Stopping a run whose episodes all fail is the orchestrator's rule
 * (`stopAfterFailedSteps`, `TrainingStoppedError`), not this one's.
 */
export class FailureWatch {
  /** Failed episodes over the whole run. */
  failedEpisodes = 0;

  /** Notes an episode as it finishes. */
  observe(_source: string, episode: Episode): void {
    if (!episode.ok) this.failedEpisodes++;
  }
}
