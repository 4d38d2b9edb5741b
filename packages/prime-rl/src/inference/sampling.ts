import type { Rng } from './rng.ts';

/** The softmax terms of the last call (reused: sampling is synchronous, one call at a time). */
let scratch = new Float64Array(64);

/**
 * Samples one token from `logits` at `temperature` (0 = greedy). Returns the token and its
 * logprob under the distribution it was drawn from, softmax(logits / temperature) — the same
 * quantity the trainer recomputes from `logits / temperature`.
 */
export function sampleToken(options: { logits: Float32Array; temperature: number; rng: Rng }): {
  token: number;
  logprob: number;
} {
  const { logits, rng } = options;
  const t = options.temperature > 0 ? options.temperature : 1;
  let max = Number.NEGATIVE_INFINITY;
  let argmax = 0;
  for (let i = 0; i < logits.length; i++) {
    const x = logits[i] as number;
    if (x > max) {
      max = x;
      argmax = i;
    }
  }
  // Each term computed once (the sampling walk subtracts the same values the sum added).
  if (scratch.length < logits.length) scratch = new Float64Array(logits.length);
  const terms = scratch;
  let z = 0;
  for (let i = 0; i < logits.length; i++) {
    const e = Math.exp(((logits[i] as number) - max) / t);
    terms[i] = e;
    z += e;
  }
  const logZ = Math.log(z);
  let token = argmax;
  if (options.temperature !== 0) {
    let u = rng.next() * z;
    for (let i = 0; i < logits.length; i++) {
      u -= terms[i] as number;
      if (u <= 0) {
        token = i;
        break;
      }
    }
  }
  return { token, logprob: ((logits[token] as number) - max) / t - logZ };
}
