import { seededRandom } from '@troupe/verifiers/random';
import { describe, expect, it } from 'vitest';
import {
  allDeals,
  KUHN_INFO_SETS,
  type KuhnPolicyTable,
  kuhnActingPlayer,
  kuhnAveragePolicy,
  kuhnBestResponseValue,
  kuhnDeal,
  kuhnEquilibrium,
  kuhnExpectedPayoff,
  kuhnInfoSetKey,
  kuhnIsTerminal,
  kuhnLegalActions,
  kuhnNashConv,
  kuhnPayoff,
  uniformKuhnPolicy,
} from './game.ts';

describe('Kuhn poker game', () => {
  it('deals two distinct cards, deterministically per seed, covering all six deals', () => {
    expect(kuhnDeal(7)).toEqual(kuhnDeal(7));
    const seen = new Map<string, number>();
    for (let seed = 0; seed < 6000; seed++) {
      const [a, b] = kuhnDeal(seed);
      expect(a).not.toBe(b);
      seen.set(a + b, (seen.get(a + b) ?? 0) + 1);
    }
    expect(seen.size).toBe(6);
    for (const count of seen.values()) expect(count).toBeGreaterThan(850);
  });

  it('deals what the pool-and-splice reference deals from the same seed', () => {
    // The first implementation: card one drawn from the three, card two from the two left, in order.
    const reference = (seed: number) => {
      const random = seededRandom(seed);
      const pool = ['J', 'Q', 'K'];
      const first = pool.splice(Math.floor(random() * 3), 1)[0];
      return [first, pool[Math.floor(random() * 2)]];
    };
    for (let seed = 0; seed < 20_000; seed++) expect(kuhnDeal(seed)).toEqual(reference(seed));
  });

  it('gives the legal actions and the acting player of every history', () => {
    expect(kuhnLegalActions([])).toEqual(['check', 'bet']);
    expect(kuhnLegalActions(['check'])).toEqual(['check', 'bet']);
    expect(kuhnLegalActions(['bet'])).toEqual(['fold', 'call']);
    expect(kuhnLegalActions(['check', 'bet'])).toEqual(['fold', 'call']);
    expect(kuhnLegalActions(['bet', 'call'])).toEqual([]);
    expect(() => kuhnLegalActions(['fold'])).toThrow(/not a Kuhn poker history/);
    expect([[], ['check'], ['bet'], ['check', 'bet']].map((h) => kuhnActingPlayer(h as never))).toEqual([0, 1, 1, 0]);
    expect(kuhnIsTerminal(['check', 'check'])).toBe(true);
    expect(kuhnIsTerminal(['check', 'bet'])).toBe(false);
  });

  it('pays player 0 by the rules table', () => {
    expect(kuhnPayoff(['K', 'J'], ['check', 'check'])).toBe(1);
    expect(kuhnPayoff(['J', 'K'], ['check', 'check'])).toBe(-1);
    expect(kuhnPayoff(['J', 'K'], ['bet', 'fold'])).toBe(1);
    expect(kuhnPayoff(['K', 'J'], ['check', 'bet', 'fold'])).toBe(-1);
    expect(kuhnPayoff(['Q', 'J'], ['bet', 'call'])).toBe(2);
    expect(kuhnPayoff(['Q', 'K'], ['check', 'bet', 'call'])).toBe(-2);
    expect(() => kuhnPayoff(['Q', 'K'], ['check'])).toThrow(/not terminal/);
    expect(() => kuhnPayoff(['Q', 'K'], ['check', 'bet'])).toThrow(/"check-bet" is not terminal/);
    expect(() => kuhnPayoff(['Q', 'K'], [])).toThrow(/"" is not terminal/);
  });

  it('names information sets by card then p/b letters', () => {
    expect(kuhnInfoSetKey('K', [])).toBe('K');
    expect(kuhnInfoSetKey('Q', ['check'])).toBe('Qp');
    expect(kuhnInfoSetKey('J', ['bet'])).toBe('Jb');
    expect(kuhnInfoSetKey('K', ['check', 'bet'])).toBe('Kpb');
    expect(KUHN_INFO_SETS).toHaveLength(12);
  });

  it('computes NashConv exactly: 11/12 for uniform random, 0 across the equilibrium family', () => {
    expect(kuhnNashConv(uniformKuhnPolicy())).toBeCloseTo(11 / 12, 12);
    for (const alpha of [0, 1 / 12, 1 / 6, 1 / 4, 1 / 3]) {
      const eq = kuhnEquilibrium(alpha);
      expect(kuhnNashConv(eq)).toBeCloseTo(0, 12);
      expect(kuhnExpectedPayoff(eq)).toBeCloseTo(-1 / 18, 12);
      expect(kuhnBestResponseValue(eq, 0)).toBeCloseTo(-1 / 18, 12);
      expect(kuhnBestResponseValue(eq, 1)).toBeCloseTo(1 / 18, 12);
    }
    expect(() => kuhnEquilibrium(0.5)).toThrow(/alpha/);
  });

  it('is positive for any deviation from equilibrium, and best responses beat the policy itself', () => {
    const eq = kuhnEquilibrium(1 / 6);
    const alwaysBet = Object.fromEntries(KUHN_INFO_SETS.map((k) => [k, [0, 1]])) as unknown as KuhnPolicyTable;
    expect(kuhnNashConv(alwaysBet)).toBeGreaterThan(0.3);
    const tweaked: KuhnPolicyTable = { ...eq, Qb: [0.5, 0.5] };
    expect(kuhnNashConv(tweaked)).toBeGreaterThan(0.01);
    const v = kuhnExpectedPayoff(tweaked);
    expect(kuhnBestResponseValue(tweaked, 0)).toBeGreaterThanOrEqual(v - 1e-12);
    expect(kuhnBestResponseValue(tweaked, 1)).toBeGreaterThanOrEqual(-v - 1e-12);
  });

  it('averages policies in sequence form (weighted by own reach)', () => {
    const a = { ...uniformKuhnPolicy(), J: [1, 0] as const, Jpb: [1, 0] as const };
    const b = { ...uniformKuhnPolicy(), J: [0, 1] as const, Jpb: [0, 1] as const };
    const avg = kuhnAveragePolicy([a, b]);
    expect(avg.J).toEqual([0.5, 0.5]);
    // Jpb is only reached by policy a (which checks J), so the average plays a there.
    expect(avg.Jpb).toEqual([1, 0]);
    expect(allDeals()).toHaveLength(6);
  });
});
