import { describe, expect, it } from 'vitest';
import { passAtK } from './pass-at-k.ts';

describe('passAtK', () => {
  it('is the fraction of correct attempts when k = 1', () => {
    expect(passAtK({ n: 4, c: 1, k: 1 })).toBeCloseTo(0.25, 12);
    expect(passAtK({ n: 10, c: 7, k: 1 })).toBeCloseTo(0.7, 12);
  });

  it('equals 1 − C(n−c,k)/C(n,k)', () => {
    // n=4, c=1, k=2: 1 − C(3,2)/C(4,2) = 1 − 3/6.
    expect(passAtK({ n: 4, c: 1, k: 2 })).toBeCloseTo(0.5, 12);
    // n=5, c=2, k=3: 1 − C(3,3)/C(5,3) = 1 − 1/10.
    expect(passAtK({ n: 5, c: 2, k: 3 })).toBeCloseTo(0.9, 12);
  });

  it('is 0 with no correct attempt and 1 when every draw must hold a correct one', () => {
    expect(passAtK({ n: 8, c: 0, k: 8 })).toBe(0);
    expect(passAtK({ n: 4, c: 3, k: 2 })).toBe(1);
  });

  it('rejects k larger than n and inconsistent counts', () => {
    expect(() => passAtK({ n: 2, c: 1, k: 3 })).toThrow(/exceeds/);
    expect(() => passAtK({ n: 2, c: 3, k: 1 })).toThrow(/c <= n/);
  });
});
