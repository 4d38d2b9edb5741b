import { sampledAdvantage } from '@troupe/verifiers/internal';
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

  it('gives every sampled node a scalar its one advantage, which every sampled token reads', () => {
    const trace = twoTurns();
    assignAdvantages(trace, 0.25);
    for (const node of trace.nodes) {
      expect(node.advantage).toBe(0.25);
      expect(node.advantages).toBeUndefined();
    }
    expect([0, 1].map((i) => sampledAdvantage(trace.nodes[0]!, i))).toEqual([0.25, 0.25]);
    expect([0, 1, 2].map((i) => sampledAdvantage(trace.nodes[1]!, i))).toEqual([0.25, 0.25, 0.25]);
    // +0 and -0 stay apart (the zero-advantage filter and the wire see the value as given).
    assignAdvantages(trace, -0);
    expect(Object.is(trace.nodes[0]!.advantage, -0)).toBe(true);
  });

  it('keeps one form per node: a list replaces a scalar and a scalar replaces a list', () => {
    const trace = twoTurns();
    assignAdvantages(trace, 0.5);
    assignAdvantages(trace, [1, 2, 3, 4, 5]);
    expect(trace.nodes.map((node) => [node.advantage, node.advantages])).toEqual([
      [undefined, [1, 2]],
      [undefined, [3, 4, 5]],
    ]);
    expect(Object.keys(trace.nodes[0]!)).not.toContain('advantage');
    assignAdvantages(trace, -1);
    expect(trace.nodes.map((node) => [node.advantage, node.advantages])).toEqual([
      [-1, undefined],
      [-1, undefined],
    ]);
    expect(JSON.parse(JSON.stringify(trace.nodes[1]))).toMatchObject({ advantage: -1 });
    expect(Object.keys(trace.nodes[1]!)).not.toContain('advantages');
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
    expect(trace.nodes[0]!.advantage).toBeUndefined();
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
    expect(trace.nodes[0]!.advantage).toBeUndefined();
    expect(trace.nodes[1]!.advantage).toBe(1);
    clearAdvantages(trace);
    expect(trace.nodes[1]!.advantage).toBeUndefined();
    assignAdvantages(trace, [2]);
    clearAdvantages(trace);
    expect(trace.nodes[1]!.advantages).toBeUndefined();
  });
});
