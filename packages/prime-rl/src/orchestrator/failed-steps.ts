import type { Episode, TraceError } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { TrainingStoppedError } from '../errors/training-stopped-error.ts';
import type { ScoredGroup } from './types.ts';

export { TrainingStoppedError } from '../errors/training-stopped-error.ts';

/** Default of `stopAfterFailedSteps`: steps in a row whose every episode failed before the run stops. */
export const DEFAULT_STOP_AFTER_FAILED_STEPS = 5;

/**
 * An episode's first error: its own, else its first failed trace's (with the role), passing over
 * the `episode`-stage marks the scorer puts on a failed episode's other traces
 * (`markFailedEpisode`), which only say that another trace failed.
 */
function firstError(episode: Episode): (TraceError & { role?: string }) | undefined {
  const own = episode.errors[0];
  if (own) return own;
  const traced = episode.traces.flatMap((trace) => trace.errors.map((error) => ({ ...error, role: trace.agent.name })));
  return traced.find((error) => error.stage !== 'episode') ?? traced[0];
}

/**
 * The first failed episode's first error in `groups`: "first error (source …, role …, stage …):
 * Type: message", and the user's own stack when the error wraps it (an env or reward that threw:
 * the recorded stack's `Caused by:` part, naming their file and line).
 */
function describeFirstError(groups: readonly ScoredGroup[]): { text: string; causeStack: string | null } | null {
  for (const group of groups) {
    for (const episode of group.episodes) {
      const error = firstError(episode);
      if (!error) continue;
      const where = [
        `source ${group.source}`,
        ...(error.role ? [`role ${error.role}`] : []),
        ...(error.stage ? [`stage ${error.stage}`] : []),
      ];
      return {
        text: `first error (${where.join(', ')}): ${error.type}: ${error.message}`,
        causeStack: error.stack?.match(/(?:^|\n)Caused by: ([\s\S]*)$/)?.[1] ?? null,
      };
    }
  }
  return null;
}

/**
 * The rule for steps whose every episode failed (a model endpoint down, a harness that cannot
 * start): such a step's episodes train nothing, the step is collected again, and the run stops with
 * {@link TrainingStoppedError} at the first step of the run when it failed whole, or after
 * `stopAfter` such steps in a row. A step with any episode that did not fail resets the count.
 * Steps that failed are kept apart from those that were empty for want of a signal (every
 * advantage 0, every group off-policy), which follow prime-rl's rule of 10 in a row.
 */
export class FailedSteps {
  private consecutive = 0;
  private collected = 0;
  private first: { text: string; causeStack: string | null } | null = null;

  constructor(
    private readonly options: {
      stopAfter: number;
      /** The endpoints the run calls, for the message. */
      endpoints: readonly string[];
    },
  ) {
    if (!Number.isInteger(options.stopAfter) || options.stopAfter < 1)
      throw new ConfigError(`stopAfterFailedSteps: expected a whole number ≥ 1, got ${options.stopAfter}`, {
        path: 'stopAfterFailedSteps',
      });
  }

  /**
   * Notes one collection of step `step`: true when every episode failed (then it must not train), and
   * throws {@link TrainingStoppedError} when the run must stop.
   */
  observe(groups: readonly ScoredGroup[], step: number): boolean {
    const episodes = groups.flatMap((group) => group.episodes);
    const isFirst = this.collected === 0;
    this.collected++;
    if (episodes.length === 0 || episodes.some((episode) => episode.ok)) {
      this.consecutive = 0;
      this.first = null;
      return false;
    }
    this.consecutive++;
    this.first ??= describeFirstError(groups);
    if (isFirst || this.consecutive >= this.options.stopAfter)
      throw TrainingStoppedError.failedSteps({
        step,
        consecutive: this.consecutive,
        first: isFirst,
        failed: episodes.length,
        firstError: this.first?.text ?? null,
        causeStack: this.first?.causeStack ?? null,
        endpoints: this.options.endpoints,
      });
    return true;
  }

  /** Steps in a row whose every episode failed, so far. */
  get inARow(): number {
    return this.consecutive;
  }
}
