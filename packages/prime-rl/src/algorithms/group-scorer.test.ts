import type { Episode } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import type { Algorithm } from './algorithm.ts';
import { GroupScorer } from './group-scorer.ts';
import { Grpo } from './grpo.ts';

describe('GroupScorer', () => {
  it('scores a group once its groupSize episodes are in, in group order', async () => {
    const calls: string[][] = [];
    const algorithm: Algorithm = {
      type: 'spy',
      scoreEpisode: (episode) => void calls.push([`episode ${episode.group.index}`]),
      scoreGroup: (episodes: readonly Episode[]) => void calls.push(episodes.map((e) => `group ${e.group.index}`)),
    };
    const scorer = new GroupScorer({ algorithm, groupSize: 2 });
    expect(await scorer.addEpisode(makeEpisode({ groupId: 'g', index: 1, traces: [makeTrace({})] }))).toBeNull();
    expect(scorer.pendingGroups).toBe(1);
    const group = await scorer.addEpisode(makeEpisode({ groupId: 'g', index: 0, traces: [makeTrace({})] }));
    expect(group?.map((e) => e.group.index)).toEqual([0, 1]);
    expect(calls).toEqual([['episode 1'], ['episode 0'], ['group 0', 'group 1']]);
    expect(scorer.pendingGroups).toBe(0);
  });

  it('marks a failed episode so its clean seats take no part in the group baseline', async () => {
    const scorer = new GroupScorer({ algorithm: new Grpo(), groupSize: 3 });
    const clean = makeTrace({ role: 'proposer', reward: 10 });
    await scorer.addEpisode(makeEpisode({ groupId: 'g', index: 0, traces: [clean, makeTrace({ ok: false })] }));
    const a = makeTrace({ reward: 1 });
    const b = makeTrace({ reward: 0 });
    await scorer.addEpisode(makeEpisode({ groupId: 'g', index: 1, traces: [a] }));
    await scorer.addEpisode(makeEpisode({ groupId: 'g', index: 2, traces: [b] }));
    expect(clean.ok).toBe(false);
    expect([advantageOf(clean), advantageOf(a), advantageOf(b)]).toEqual([undefined, 0.5, -0.5]);
  });

  it('skips scoreGroup when no trace of the group trains, and drops groups unscored', async () => {
    let scored = 0;
    const scorer = new GroupScorer({ algorithm: { type: 'count', scoreGroup: () => void scored++ }, groupSize: 1 });
    await scorer.addEpisode(makeEpisode({ groupId: 'x', traces: [makeTrace({ trainable: false })] }));
    expect(scored).toBe(0);
    const two = new GroupScorer({ algorithm: new Grpo(), groupSize: 2 });
    await two.addEpisode(makeEpisode({ groupId: 'y', traces: [makeTrace({})] }));
    expect(two.dropGroup('y')).toHaveLength(1);
    expect(two.pendingGroups).toBe(0);
    expect(() => new GroupScorer({ algorithm: new Grpo(), groupSize: 0 })).toThrow(/groupSize/);
  });
});
