import type { Trace } from '@troupe/verifiers';
import type { ActionLoss } from '../algorithms/algorithm.ts';
import { referenceLogprobsOf } from '../algorithms/reference-logprobs.ts';
import { tokenChains } from './trace-to-samples.ts';
import type { TrainingSample } from './training-sample.ts';

/**
 * Routes a sample's sampled tokens into its algorithm's loss component (prime-rl
 * `stamp_loss_routing`, `src/prime_rl/orchestrator/algo/routing.py:67-84` at 559b447): `rl`
 * changes nothing; `ce` and `ref_kl` set every rl weight to 0 and the component's weight to 1 on
 * each token with its mask bit set (over any ce weights the sample already had, for `ce`).
 */
export function stampLossRouting(sample: TrainingSample, actionLoss: ActionLoss): void {
  if (actionLoss === 'rl') return;
  const length = sample.tokenIds.length;
  sample.rlWeights = new Array<number>(length).fill(0);
  const weights = actionLoss === 'ce' && sample.ceWeights ? [...sample.ceWeights] : new Array<number>(length).fill(0);
  for (let t = 0; t < length; t++) if (sample.mask[t]) weights[t] = 1;
  if (actionLoss === 'ce') sample.ceWeights = weights;
  else sample.refKlWeights = weights;
}

/**
 * Puts the teacher logprobs a trace's nodes were scored with (`assignReferenceLogprobs`) on its
 * samples, per token (0 on tokens that were not sampled, or not scored): the sample's
 * `refLogprobs`, as prime-rl's `trace_to_samples` carries `branch.reference_logprobs`
 * (`src/prime_rl/orchestrator/trajectories.py:147`). Samples of a trace no teacher scored are left
 * as they are.
 */
export function attachReferenceLogprobs(trace: Trace, samples: readonly TrainingSample[]): void {
  if (samples.length === 0) return;
  const chains = tokenChains(trace);
  for (const sample of samples) {
    const chain = chains[sample.branch];
    if (!chain) continue;
    const values = new Array<number>(sample.tokenIds.length).fill(0);
    let offset = 0;
    let scored = false;
    for (const node of chain) {
      const ids = node.tokenIds ?? [];
      const reference = referenceLogprobsOf(node);
      if (reference) {
        scored = true;
        const mask = node.mask ?? [];
        let k = 0;
        for (let t = 0; t < ids.length; t++) if (mask[t]) values[offset + t] = reference[k++] as number;
      }
      offset += ids.length;
    }
    if (scored && offset === values.length) sample.refLogprobs = values;
  }
}
