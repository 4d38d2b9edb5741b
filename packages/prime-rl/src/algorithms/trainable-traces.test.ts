import { describe, expect, it } from 'vitest';
import { makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { isTrainableTrace, iterTrainableTraces, markFailedEpisode, traceReward } from './trainable-traces.ts';

describe('iterTrainableTraces', () => {
  it('yields only ok, trainable traces with sampled tokens, episodes then completion order', () => {
    const a = makeTrace({ id: 'a' });
    const frozen = makeTrace({ id: 'frozen', trainable: false });
    const broken = makeTrace({ id: 'broken', ok: false });
    const silent = makeTrace({ id: 'silent', turns: [{ prompt: [1], completion: [] }] });
    const b = makeTrace({ id: 'b' });
    const c = makeTrace({ id: 'c' });
    const episodes = [makeEpisode({ traces: [a, frozen, broken, silent, b] }), makeEpisode({ traces: [c] })];
    expect([...iterTrainableTraces(episodes)].map((t) => t.id)).toEqual(['a', 'b', 'c']);
    expect(isTrainableTrace(silent)).toBe(false);
  });
});

describe('markFailedEpisode', () => {
  it('marks every clean trace of a failed episode failed, so none of its seats train', () => {
    const proposer = makeTrace({ role: 'proposer', reward: 1 });
    const solver = makeTrace({ role: 'solver', ok: false });
    const episode = makeEpisode({ traces: [proposer, solver] });
    expect(markFailedEpisode(episode)).toBe(1);
    expect(proposer.ok).toBe(false);
    expect(proposer.errors[0]).toMatchObject({ type: 'EnvError', stage: 'episode' });
    expect([...iterTrainableTraces(episode)]).toEqual([]);
  });

  it('marks traces failed when the episode itself recorded an error', () => {
    const trace = makeTrace({});
    const episode = makeEpisode({ traces: [trace] });
    episode.recordError(new Error('finalize threw'), 'finalize');
    markFailedEpisode(episode);
    expect(isTrainableTrace(trace)).toBe(false);
  });

  it('leaves an ok episode alone', () => {
    const trace = makeTrace({});
    expect(markFailedEpisode(makeEpisode({ traces: [trace] }))).toBe(0);
    expect(trace.ok).toBe(true);
  });
});

describe('traceReward', () => {
  it('equals trace.reward: Σ score·weight over non-null rewards', () => {
    const trace = makeTrace({});
    trace.recordReward('a', 1, 0.5);
    trace.recordReward('b', 2, 2);
    trace.rewards.c = null;
    expect(traceReward(trace)).toBe(4.5);
    expect(traceReward(trace)).toBe(trace.reward);
  });
});
