import type { TrainingSample } from './training-sample.ts';

/** What {@link filterZeroAdvantages} did. */
export interface ZeroAdvantageFilterResult {
  /** Samples that still have a trained token. */
  samples: TrainingSample[];
  /** Samples dropped because every trained token had advantage 0. */
  droppedSamples: number;
  /** Tokens whose mask bit was cleared because their advantage was 0 (kept and dropped samples). */
  maskedTokens: number;
}

/**
 * prime-rl's `filter_zero_advantages` (on by default): a token with advantage exactly 0 carries no
 * policy-gradient signal, so its mask bit is cleared (it also leaves the loss normaliser), and a
 * sample left with no trained token is dropped. Applied after a batch is cut: it does not backfill
 * the batch. Mutates the masks of the given samples. A sample with a ce or ref_kl weight (an
 * `sft` or `opd` sample) is kept as it is: its tokens train without advantages.
 */
export function filterZeroAdvantages(samples: readonly TrainingSample[]): ZeroAdvantageFilterResult {
  const kept: TrainingSample[] = [];
  let droppedSamples = 0;
  let maskedTokens = 0;
  for (let s = 0; s < samples.length; s++) {
    const sample = samples[s]!;
    // A sample routed to ce or ref_kl trains without advantages: the filter prunes rl tokens only.
    if (sample.ceWeights?.some((w) => w !== 0) || sample.refKlWeights?.some((w) => w !== 0)) {
      kept.push(sample);
      continue;
    }
    const mask = sample.mask;
    const advantages = sample.advantages;
    let trained = 0;
    for (let i = 0; i < mask.length; i++) {
      if (!mask[i]) continue;
      if (advantages[i] === 0) {
        mask[i] = false;
        maskedTokens++;
      } else {
        trained++;
      }
    }
    if (trained > 0) kept.push(sample);
    else droppedSamples++;
  }
  return { samples: kept, droppedSamples, maskedTokens };
}
