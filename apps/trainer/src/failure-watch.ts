import type { StepMetrics } from '@troupe/prime-rl/orchestrator';
import type { Episode, TraceError } from '@troupe/verifiers';

/**
 * A training run stopped because its episodes all fail: every episode of its first step, or of
 * `stop_after_failed_steps` consecutive steps. The message names the step, the sources' endpoints
 * and the first error; the checkpoint written before (if any) is kept.
 */
export class TrainingStoppedError extends Error {
  override readonly name = 'TrainingStoppedError';
  constructor(
    message: string,
    /** The step at which the run stopped (its metrics line is written; its checkpoint is not). */
    readonly step: number,
  ) {
    super(message);
  }
}

/** The run was interrupted (SIGINT / SIGTERM) at a step boundary; the last checkpoint is kept. */
export class TrainingInterruptedError extends Error {
  override readonly name = 'TrainingInterruptedError';
  constructor(
    message: string,
    /** The last step whose metrics line was written. */
    readonly step: number,
  ) {
    super(message);
  }
}

/** An episode's first error, the episode's own or its first failed trace's, with where it happened. */
function firstError(episode: Episode): (TraceError & { role?: string }) | undefined {
  const own = episode.errors[0];
  if (own) return own;
  for (const trace of episode.traces) {
    const error = trace.errors[0];
    if (error) return { ...error, role: trace.agent.name };
  }
  return undefined;
}

/**
 * Counts failed episodes per step (from each step's `train/<source>/failed_episodes` and
 * `train/<source>/episodes` metrics) and stops a run whose episodes all fail, at its first step or
 * after `stopAfter` consecutive steps, instead of training on nothing.
 */
export class FailureWatch {
  /** Failed episodes over the whole run. */
  failedEpisodes = 0;
  private consecutive = 0;
  private firstStep = true;
  private first: { source: string; error: TraceError & { role?: string } } | null = null;

  constructor(
    private readonly options: {
      stopAfter: number;
      /** Per source: the endpoints its roles call (frozen models, the policy server), for the message. */
      endpoints: Map<string, string[]>;
    },
  ) {}

  /** Notes an episode as it finishes (the first failure's error is kept for the message). */
  observe(source: string, episode: Episode): void {
    if (episode.ok || this.first) return;
    const error = firstError(episode);
    if (error) this.first = { source, error };
  }

  /**
   * The first error seen and the endpoints, for a stop message; when the error wraps the user's
   * own (an env or reward that threw), its stack follows, naming their file and line.
   */
  details(): string {
    const endpoints = [...new Set([...this.options.endpoints.values()].flat())];
    const first = this.first;
    const where = first
      ? `first error (source ${first.source}${first.error.role ? `, role ${first.error.role}` : ''}${first.error.stage ? `, stage ${first.error.stage}` : ''}): ${first.error.type}: ${first.error.message}`
      : 'no error was recorded';
    const caused = first?.error.stack?.match(/(?:^|\n)Caused by: ([\s\S]*)$/)?.[1];
    return `${where}${endpoints.length ? `; endpoints: ${endpoints.join(', ')}` : ''}${caused ? `\n  caused by ${caused}` : ''}`;
  }

  /** After each step's metrics line: throws {@link TrainingStoppedError} when the run must stop. */
  onStep(metrics: StepMetrics): void {
    let episodes = 0;
    let failed = 0;
    for (const [key, value] of Object.entries(metrics)) {
      if (typeof value !== 'number') continue;
      if (/^train\/[^/]+\/episodes$/.test(key)) episodes += value;
      else if (/^train\/[^/]+\/failed_episodes$/.test(key)) failed += value;
    }
    this.failedEpisodes += failed;
    const allFailed = episodes > 0 && failed === episodes;
    const wasFirst = this.firstStep;
    this.firstStep = false;
    if (!allFailed) {
      this.consecutive = 0;
      this.first = null;
      return;
    }
    this.consecutive++;
    if (!wasFirst && this.consecutive < this.options.stopAfter) return;
    const step = Number(metrics.step);
    const span = wasFirst ? `the run's first step (${step})` : `${this.consecutive} consecutive steps (through ${step})`;
    throw new TrainingStoppedError(`every episode of ${span} failed (${failed} of ${episodes}); ${this.details()}`, step);
  }
}
