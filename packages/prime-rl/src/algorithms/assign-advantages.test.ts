import { describe, expect, it } from 'vitest';
import { makeTrace } from './__fixtures__/episodes.ts';
import { assignAdvantages, clearAdvantages } from './assign-advantages.ts';

describe('assignAdvantages', () => {
  const twoTurns = () =>
    makeTrace({
      turns: [
        { prompt: [1, 2], completion: [3, 4] },
        { prompt: [5], completion: [6, 7, 8] },
      ],
    });

  it('broadcasts a scalar to every sampled token, one value per mask bit of each node', () => {
    const trace = twoTurns();
    assignAdvantages(trace, 0.25);
    expect(trace.nodes[0]!.advantages).toEqual([0.25, 0.25]);
    expect(trace.nodes[1]!.advantages).toEqual([0.25, 0.25, 0.25]);
  });

  it('gives single-token nodes of the same value one frozen array, and keeps +0 and -0 apart', () => {
    const oneToken = () => makeTrace({ turns: [{ prompt: [1], completion: [2] }] });
    const [a, b, c, d, e] = [oneToken(), oneToken(), oneToken(), oneToken(), oneToken()];
    assignAdvantages(a, 0.5);
    assignAdvantages(b, -0.5);
    assignAdvantages(c, 0.5);
    assignAdvantages(d, 0);
    assignAdvantages(e, -0);
    expect(a.nodes[0]!.advantages).toEqual([0.5]);
    expect(c.nodes[0]!.advantages).toBe(a.nodes[0]!.advantages);
    expect(Object.isFrozen(c.nodes[0]!.advantages)).toBe(true);
    expect(b.nodes[0]!.advantages).toEqual([-0.5]);
    expect(Object.is(d.nodes[0]!.advantages![0], 0)).toBe(true);
    expect(Object.is(e.nodes[0]!.advantages![0], -0)).toBe(true);
  });

  it('splits a per-token list over the sampled tokens in graph order', () => {
    const trace = twoTurns();
    assignAdvantages(trace, [1, 2, 3, 4, 5]);
    expect(trace.nodes[0]!.advantages).toEqual([1, 2]);
    expect(trace.nodes[1]!.advantages).toEqual([3, 4, 5]);
  });

  it('refuses a list of the wrong length, naming both counts, and writes nothing', () => {
    const trace = twoTurns();
    expect(() => assignAdvantages(trace, [1, 2, 3])).toThrow(/has 5 sampled tokens but 3 advantages/);
    expect(trace.nodes[0]!.advantages).toBeUndefined();
  });

  it('refuses non-finite advantages', () => {
    expect(() => assignAdvantages(twoTurns(), Number.NaN)).toThrow(/finite/);
    expect(() => assignAdvantages(twoTurns(), [1, 2, Number.POSITIVE_INFINITY, 4, 5])).toThrow(/\[2\]/);
  });

  it('leaves nodes without sampled tokens alone, and clears', () => {
    const trace = makeTrace({
      turns: [
        { prompt: [1], completion: [] },
        { prompt: [2], completion: [3] },
      ],
    });
    assignAdvantages(trace, 1);
    expect(trace.nodes[0]!.advantages).toBeUndefined();
    expect(trace.nodes[1]!.advantages).toEqual([1]);
    clearAdvantages(trace);
    expect(trace.nodes[1]!.advantages).toBeUndefined();
  });
});
