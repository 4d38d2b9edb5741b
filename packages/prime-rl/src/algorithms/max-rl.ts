import type { Episode, Trace } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { traceReward, trainableTraces } from './trainable-traces.ts';

/** Config of {@link MaxRl}. */
export const MaxRlConfigSchema = z.strictObject({ type: z.literal('max-rl') });
/** The config `new MaxRl(config)` accepts: just `{ type: 'max-rl' }` (MaxRL has no parameters). */
export type MaxRlConfig = z.input<typeof MaxRlConfigSchema>;

/**
 * MaxRL (arXiv:2602.02710): with `μ` the mean reward over the group's trainable traces,
 * `A = (r − μ)/μ` when `μ > 0`, else 0. E.g. `[1,0,0,0]` → `[3,−1,−1,−1]`. Equal rewards give 0.
 */
export class MaxRl implements Algorithm {
  readonly type = 'max-rl';
  /** A stale episode is dropped and the group rescored without it: `μ` is the survivors' mean. */
  readonly staleEpisodes = 'rescore';
  private readonly traces: Trace[] = [];
  private readonly rewards: number[] = [];

  constructor(config: MaxRlConfig = { type: 'max-rl' }) {
    MaxRlConfigSchema.parse(config);
  }

  scoreGroup(episodes: readonly Episode[]): void {
    const traces = this.traces;
    const rewards = this.rewards;
    traces.length = 0;
    rewards.length = 0;
    trainableTraces(episodes, traces);
    const n = traces.length;
    if (n === 0) return;
    let sum = 0;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      const r = traceReward(traces[i]!);
      rewards.push(r);
      sum += r;
      if (r < min) min = r;
      if (r > max) max = r;
    }
    const mean = sum / n;
    const tie = min === max || !(mean > 0);
    for (let i = 0; i < n; i++) assignAdvantages(traces[i]!, tie ? 0 : (rewards[i]! - mean) / mean);
    traces.length = 0;
  }
}
