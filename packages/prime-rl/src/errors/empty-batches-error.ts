import { TroupeError } from '@troupe/verifiers';

/** Why one collection of a step's episodes gave no training sample. */
export type EmptyBatchReason = 'failed-episodes' | 'zero-advantages' | 'off-policy';

/**
 * Too many collections in a row gave an empty batch, so the run stops rather than ship an empty step
 * (prime-rl's trainer cannot train one) or roll for ever. prime-rl's orchestrator stops the same
 * way after 10 consecutive empty batches (`src/prime_rl/orchestrator/orchestrator.py:99,640-652`
 * at 559b447). `reason` is the cause of the last one: every episode failed, every advantage was 0,
 * or every group was too far off-policy; `counts` holds the causes of all of them.
 */
export class EmptyBatchesError extends TroupeError {
  /** The step that could not be filled (it never reached the trainer). */
  readonly step: number;
  /** Consecutive empty batches. */
  readonly consecutive: number;
  /** Cause of the last empty batch. */
  readonly reason: EmptyBatchReason;
  /** Empty batches by cause. */
  readonly counts: Record<EmptyBatchReason, number>;

  constructor(options: {
    step: number;
    consecutive: number;
    reason: EmptyBatchReason;
    counts: Record<EmptyBatchReason, number>;
  }) {
    const causes = Object.entries(options.counts)
      .filter(([, count]) => count > 0)
      .map(([cause, count]) => `${count} ${cause}`)
      .join(', ');
    super({
      name: 'EmptyBatchesError',
      message: `step ${options.step}: ${options.consecutive} consecutive empty batches (${causes}); no step ships without samples — ${EMPTY_BATCH_HINTS[options.reason]}`,
    });
    this.step = options.step;
    this.consecutive = options.consecutive;
    this.reason = options.reason;
    this.counts = options.counts;
  }

  /** True when `value` is an `EmptyBatchesError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is EmptyBatchesError {
    return TroupeError.isKind(value, 'EmptyBatchesError');
  }
}

/** What to look at for each cause. */
const EMPTY_BATCH_HINTS: Record<EmptyBatchReason, string> = {
  'failed-episodes': 'every episode failed: see the errors on the traces (model endpoint, harness, env)',
  'zero-advantages': 'every advantage was 0: check the algorithm credit and the task difficulty (or filter_zero_advantages)',
  'off-policy': 'every group was more than max_off_policy_steps behind: raise it or lower max_async',
};
