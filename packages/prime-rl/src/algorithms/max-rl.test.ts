import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { MaxRl } from './max-rl.ts';

const score = (rewards: number[]) => {
  const traces = rewards.map((reward) => makeTrace({ reward }));
  new MaxRl().scoreGroup(traces.map((trace, index) => makeEpisode({ index, traces: [trace] })));
  return traces.map(advantageOf);
};

describe('MaxRl', () => {
  it('gives (r − μ)/μ: [1,0,0,0] → [3,−1,−1,−1]', () => {
    expect(score([1, 0, 0, 0])).toEqual([3, -1, -1, -1]);
  });

  it('gives 0 when the mean is not positive, and on ties', () => {
    expect(score([0, 0, 0])).toEqual([0, 0, 0]);
    expect(score([1, -1])).toEqual([0, 0]);
    expect(score([0.3, 0.3])).toEqual([0, 0]);
  });
});
