/**
 * The unbiased pass@k estimator (Chen et al. 2021): the probability that at least one of k
 * attempts drawn without replacement from n attempts, c of them correct, is correct:
 * 1 − C(n−c, k) / C(n, k). Computed as a product to stay exact for large n.
 */
export function passAtK(options: { n: number; c: number; k: number }): number {
  const { n, c, k } = options;
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 0 || c < 0 || c > n || k < 1) {
    throw new RangeError(`passAtK: need integers 0 <= c <= n and k >= 1, got n=${n} c=${c} k=${k}`);
  }
  if (k > n) throw new RangeError(`passAtK: k=${k} exceeds the number of attempts n=${n}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}
