import type { TrainingSample } from '../samples/training-sample.ts';
import type { WireSample } from './micro-batch.ts';

/**
 * A troupe `TrainingSample` in prime-rl's `TrainingSample` form: the same per-token ids, mask,
 * logprobs and advantages, the env as `envName`, and the sampling temperature (one for the whole
 * sample, or per token when a rollout changed it between turns).
 */
export function toWireSample(sample: TrainingSample, options: { temperatures: number | readonly number[] }): WireSample {
  return {
    tokenIds: sample.tokenIds,
    mask: sample.mask,
    logprobs: sample.logprobs,
    temperatures: options.temperatures,
    envName: sample.env,
    advantages: sample.advantages,
  };
}
