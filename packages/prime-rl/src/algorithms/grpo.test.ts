import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { Grpo } from './grpo.ts';

const group = (rewards: number[]) => rewards.map((reward, index) => makeEpisode({ index, traces: [makeTrace({ reward })] }));
const advantages = (episodes: ReturnType<typeof group>) => episodes.flatMap((e) => e.traces.map(advantageOf));

describe('Grpo', () => {
  it('gives reward minus the group mean, with no std normalisation', () => {
    const episodes = group([1, 0, 0, 0]);
    new Grpo().scoreGroup(episodes);
    expect(advantages(episodes)).toEqual([0.75, -0.25, -0.25, -0.25]);
  });

  it('gives exactly 0 to a singleton group and to equal rewards', () => {
    const single = group([0.7]);
    const ties = group([0.1, 0.1, 0.1]);
    new Grpo().scoreGroup(single);
    new Grpo().scoreGroup(ties);
    expect(advantages(single)).toEqual([0]);
    expect(advantages(ties)).toEqual([0, 0, 0]);
  });

  it('pools every trainable seat of the group into one mean and skips the others', () => {
    const frozen = makeTrace({ role: 'judge', reward: 100, trainable: false });
    const broken = makeTrace({ role: 'solver', reward: 100, ok: false });
    const episodes = [
      makeEpisode({ traces: [makeTrace({ role: 'proposer', reward: 1 }), frozen] }),
      makeEpisode({ traces: [makeTrace({ role: 'solver', reward: 0 }), broken] }),
    ];
    new Grpo().scoreGroup(episodes);
    expect(advantages(episodes)).toEqual([0.5, undefined, -0.5, undefined]);
  });

  it('subtracts a linear length penalty before centring', () => {
    // out = [1, 3]: max 3; in = [2, 2]; turns = [1, 1]; mean r = 0.5
    const long = makeTrace({ reward: 0.5, turns: [{ prompt: [1, 2], completion: [3, 4, 5] }] });
    const short = makeTrace({ reward: 0.5, turns: [{ prompt: [1, 2], completion: [3] }] });
    const episodes = [makeEpisode({ traces: [short] }), makeEpisode({ index: 1, traces: [long] })];
    new Grpo({ type: 'grpo', lengthPenalty: { type: 'linear' } }).scoreGroup(episodes);
    const penShort = 0.5 * (0.25 / 3 + 0.1 + 0.1);
    const penLong = 0.5 * (0.25 + 0.1 + 0.1);
    const mean = (0.5 - penShort + 0.5 - penLong) / 2;
    expect(advantageOf(short)).toBeCloseTo(0.5 - penShort - mean, 12);
    expect(advantageOf(long)).toBeCloseTo(0.5 - penLong - mean, 12);
    expect(advantageOf(short)! > 0).toBe(true);
  });
});
