import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { Grpo } from './grpo.ts';
import { Rae } from './rae.ts';
import { createAlgorithm } from './registry.ts';

/** A Kuhn-like seat trace: its role, own card on `info.kuhn.card`, and payoff. */
function seat(role: string, card: string, reward: number) {
  const trace = makeTrace({ role, reward });
  trace.info.kuhn = { card };
  return trace;
}

describe('Rae with a per-(role, key) baseline', () => {
  it('keeps one baseline per (role, value at key): K and J of the same seat do not share one', () => {
    const rae = new Rae({ type: 'rae', decay: 0.5, key: 'info.kuhn.card' });
    // Hand 1: player0 holds K and wins 1; player1 holds J and loses 1.
    rae.scoreGroup([makeEpisode({ traces: [seat('player0', 'K', 1), seat('player1', 'J', -1)] })]);
    // Hand 2: player0 holds J and loses 2; its J baseline is still 0, so A = −2 (not −2 − 0.5).
    const traces = [seat('player0', 'J', -2), seat('player1', 'K', 2)];
    rae.scoreGroup([makeEpisode({ traces })]);
    expect(traces.map(advantageOf)).toEqual([-2, 2]);
    expect(rae.baseline({ env: 'env', role: 'player0', value: 'K' })).toBe(0.5);
    expect(rae.baseline({ env: 'env', role: 'player0', value: 'J' })).toBe(-1);
    expect(rae.baseline({ env: 'env', role: 'player0' })).toBe(0);
  });

  it('differs from pooled GRPO in zero-sum play, where the pooled group mean is 0', () => {
    const hand = () => [seat('player0', 'K', 1), seat('player1', 'Q', -1)];
    const rae = new Rae({ type: 'rae', decay: 0.5, key: 'info.kuhn.card' });
    const grpo = new Grpo();
    for (let i = 0; i < 3; i++) rae.scoreGroup([makeEpisode({ traces: hand() })]);
    const byRae = hand();
    const byGrpo = hand();
    rae.scoreGroup([makeEpisode({ traces: byRae })]);
    grpo.scoreGroup([makeEpisode({ traces: byGrpo })]);
    // GRPO: r − mean(r) = r (the mean of +1 and −1 is 0). RAE keyed: r − b(K) with b(K) = 0.875 after three wins.
    expect(byGrpo.map(advantageOf)).toEqual([1, -1]);
    expect(byRae.map(advantageOf)).toEqual([0.125, -0.125]);
  });

  it('names the path when a trace has nothing there, and refuses a bad path at the door', () => {
    const rae = new Rae({ type: 'rae', key: 'info.kuhn.card' });
    expect(() => rae.scoreGroup([makeEpisode({ traces: [makeTrace({ role: 'p', reward: 1 })] })])).toThrow(
      /rae\.key: the p trace has no scalar at info\.kuhn\.card/,
    );
    expect(() => createAlgorithm({ type: 'rae', key: 'info..card' })).toThrow(/algorithm\.key/);
  });

  it('saves its keyed baselines and refuses a state saved with another key', () => {
    const rae = new Rae({ type: 'rae', decay: 0.5, key: 'info.kuhn.card' });
    rae.scoreGroup([makeEpisode({ traces: [seat('player0', 'K', 1)] })]);
    const saved = JSON.parse(JSON.stringify(rae.state()));
    const restored = new Rae({ type: 'rae', decay: 0.5, key: 'info.kuhn.card' });
    restored.loadState(saved);
    expect(restored.baseline({ env: 'env', role: 'player0', value: 'K' })).toBe(0.5);
    expect(() => new Rae({ type: 'rae', decay: 0.5 }).loadState(saved)).toThrow(/state\.key/);
  });
});
