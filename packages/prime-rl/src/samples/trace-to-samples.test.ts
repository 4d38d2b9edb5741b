import { describe, expect, it } from 'vitest';
import { makeEpisode, makeTrace } from '../algorithms/__fixtures__/episodes.ts';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { episodesToSamples, traceToSamples } from './trace-to-samples.ts';

describe('traceToSamples', () => {
  it('merges turns whose prompt extends the previous prompt+completion into one sample', () => {
    const trace = makeTrace({
      role: 'solver',
      turns: [
        { prompt: [1, 2], completion: [3, 4], logprobs: [-0.1, -0.2] },
        { prompt: [5], completion: [6], logprobs: [-0.3] },
      ],
    });
    assignAdvantages(trace, [0.5, 0.6, 0.7]);
    const samples = traceToSamples({ trace, env: 'math', episodeId: 'e1' });
    expect(samples).toEqual([
      {
        tokenIds: [1, 2, 3, 4, 5, 6],
        mask: [false, false, true, true, false, true],
        logprobs: [0, 0, -0.1, -0.2, 0, -0.3],
        advantages: [0, 0, 0.5, 0.6, 0, 0.7],
        env: 'math',
        role: 'solver',
        traceId: trace.id,
        episodeId: 'e1',
        branch: 0,
      },
    ]);
    expect(samples[0]!.tokenIds).toEqual(trace.tokenSequence(1));
  });

  it('starts a new sample at a divergence (tokenParent null)', () => {
    const trace = makeTrace({
      turns: [
        { prompt: [1], completion: [2] },
        { prompt: [9, 9], completion: [3], tokenParent: null },
      ],
    });
    assignAdvantages(trace, 1);
    const samples = traceToSamples({ trace, env: 'env', episodeId: 'e' });
    expect(samples.map((s) => s.tokenIds)).toEqual([
      [1, 2],
      [9, 9, 3],
    ]);
    expect(samples.map((s) => s.branch)).toEqual([0, 1]);
  });

  it('trains a sampled node shared by two branches only in the first', () => {
    const trace = makeTrace({
      turns: [
        { prompt: [1], completion: [2] },
        { prompt: [3], completion: [4], tokenParent: 0 },
        { prompt: [5], completion: [6], tokenParent: 0 },
      ],
    });
    assignAdvantages(trace, [0.1, 0.2, 0.3]);
    const [first, second] = traceToSamples({ trace, env: 'env', episodeId: 'e' });
    expect(first).toMatchObject({ tokenIds: [1, 2, 3, 4], mask: [false, true, false, true], advantages: [0, 0.1, 0, 0.2] });
    expect(second).toMatchObject({ tokenIds: [1, 2, 5, 6], mask: [false, false, false, true], advantages: [0, 0, 0, 0.3] });
  });

  it('gives no samples for untrainable, failed or token-less traces', () => {
    for (const trace of [
      makeTrace({ trainable: false }),
      makeTrace({ ok: false }),
      makeTrace({ turns: [{ prompt: [1], completion: [] }] }),
    ]) {
      expect(traceToSamples({ trace, env: 'env', episodeId: 'e' })).toEqual([]);
    }
  });

  it('refuses a trainable trace that was never scored', () => {
    expect(() => traceToSamples({ trace: makeTrace({ id: 'unscored' }), env: 'env', episodeId: 'e' })).toThrow(
      /unscored.*without advantages/,
    );
  });

  it('stamps env, role and episode on the samples of every trainable trace', () => {
    const proposer = makeTrace({ role: 'proposer' });
    const judge = makeTrace({ role: 'judge', trainable: false });
    assignAdvantages(proposer, 1);
    const episode = makeEpisode({ env: 'ps', id: 'ep', traces: [proposer, judge] });
    expect(episodesToSamples({ episodes: [episode] }).map((s) => [s.env, s.role, s.episodeId])).toEqual([
      ['ps', 'proposer', 'ep'],
    ]);
  });
});
