import type { Rng } from './rng.ts';

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
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(((logits[i] as number) - max) / t);
  const logZ = Math.log(z);
  let token = argmax;
  if (options.temperature !== 0) {
    let u = rng.next() * z;
    for (let i = 0; i < logits.length; i++) {
      u -= Math.exp(((logits[i] as number) - max) / t);
      if (u <= 0) {
        token = i;
        break;
      }
    }
  }
  return { token, logprob: ((logits[token] as number) - max) / t - logZ };
}
