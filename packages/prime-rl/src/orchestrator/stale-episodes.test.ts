import type { Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from '../algorithms/__fixtures__/episodes.ts';
import type { Algorithm } from '../algorithms/algorithm.ts';
import { GroupScorer } from '../algorithms/group-scorer.ts';
import { createAlgorithm } from '../algorithms/registry.ts';
import { dropStaleEpisodes, episodeVersion } from './stale-episodes.ts';
import type { ScoredGroup } from './types.ts';

/** A trace of reward `reward` whose one call was served by policy `served` (unrecorded when undefined). */
function servedTrace(reward: number, served?: number, trainable = true): Trace {
  const trace = makeTrace({ reward, trainable });
  trace.calls.push({
    node: 0,
    model: 'main',
    dialect: 'direct',
    sampling: {},
    startedAt: 0,
    durationMs: 1,
    ...(served === undefined ? {} : { policyVersion: served }),
  });
  return trace;
}

/** A group dispatched at `version`, scored by `algorithm` through a `GroupScorer` as the orchestrator does. */
async function scored(algorithm: Algorithm, version: number, traces: Trace[]): Promise<ScoredGroup> {
  const scorer = new GroupScorer({ algorithm, groupSize: traces.length });
  let episodes = null;
  for (const [index, trace] of traces.entries())
    episodes = await scorer.addEpisode(makeEpisode({ groupId: `g${version}`, index, traces: [trace] }));
  return { source: 'src', version, episodes: episodes ?? [] };
}

const rewards = (group: ScoredGroup) => group.episodes.map((e) => e.traces[0]?.reward);
const advantages = (group: ScoredGroup) => group.episodes.map((e) => advantageOf(e.traces[0] as Trace));

describe('dropStaleEpisodes', () => {
  it('counts the trainer steps an episode waited in the queue: fresh when dispatched, dropped at a later step', async () => {
    const grpo = createAlgorithm({ type: 'grpo' });
    // Dispatched at version 1 right after the trainer finished step 1: 0 steps behind then.
    const group = await scored(grpo, 1, [servedTrace(1, 1), servedTrace(0, 1)]);
    const at = (step: number) => dropStaleEpisodes({ groups: [group], step, maxOffPolicySteps: 1, algorithmOf: () => grpo });
    // Consumed by step 3 (trains on v2): 1 behind, within the bound.
    expect(await at(3)).toMatchObject({ episodes: 0, groupsDropped: 0, groups: [group] });
    // Queued until step 4 (trains on v3): 2 behind, over the bound, though it was fresh when dispatched.
    expect(await at(4)).toEqual({ episodes: 2, groupsDropped: 1, groups: [] });
  });

  it('GRPO drops the one stale episode and rescores its group without it', async () => {
    const grpo = createAlgorithm({ type: 'grpo' });
    // Dispatched at v2, but the first episode's call was served by v0 (its span starts there).
    const group = await scored(grpo, 2, [servedTrace(1, 0), servedTrace(1, 2), servedTrace(0, 2)]);
    expect(advantages(group)).toEqual([1 / 3, 1 / 3, -2 / 3].map((a) => expect.closeTo(a, 6)));
    const drop = await dropStaleEpisodes({ groups: [group], step: 4, maxOffPolicySteps: 1, algorithmOf: () => grpo });
    expect(drop.episodes).toBe(1);
    expect(drop.groupsDropped).toBe(0);
    expect(drop.groups).toHaveLength(1);
    const [kept] = drop.groups as [ScoredGroup];
    expect(rewards(kept)).toEqual([1, 0]);
    // The survivors' own mean (0.5), not the full group's (2/3).
    expect(advantages(kept)).toEqual([0.5, -0.5]);
  });

  it('MaxRL and hierarchical GRPO rescore too; RAE keeps the survivors’ advantages', async () => {
    const maxRl = createAlgorithm({ type: 'max-rl' });
    const group = await scored(maxRl, 2, [servedTrace(1, 0), servedTrace(1, 2), servedTrace(0, 2)]);
    const drop = await dropStaleEpisodes({ groups: [group], step: 4, maxOffPolicySteps: 1, algorithmOf: () => maxRl });
    // μ = 0.5 over the survivors: (1 − 0.5)/0.5 = 1, (0 − 0.5)/0.5 = −1.
    expect(advantages(drop.groups[0] as ScoredGroup)).toEqual([1, -1]);
    expect(createAlgorithm({ type: 'hierarchical-grpo', episodeAgents: ['solver'] }).staleEpisodes).toBe('rescore');

    const rae = createAlgorithm({ type: 'rae' });
    const raeGroup = await scored(rae, 2, [servedTrace(1, 0), servedTrace(1, 2), servedTrace(0, 2)]);
    const before = advantages(raeGroup).slice(1);
    const raeDrop = await dropStaleEpisodes({ groups: [raeGroup], step: 4, maxOffPolicySteps: 1, algorithmOf: () => rae });
    expect(raeDrop).toMatchObject({ episodes: 1, groupsDropped: 0 });
    expect(advantages(raeDrop.groups[0] as ScoredGroup)).toEqual(before);
  });

  it('drops the whole group when the algorithm does not say it can do without an episode', async () => {
    let calls = 0;
    const custom: Algorithm = { type: 'custom', scoreGroup: () => void calls++ };
    const group = await scored(custom, 2, [servedTrace(1, 0), servedTrace(1, 2)]);
    const drop = await dropStaleEpisodes({ groups: [group], step: 4, maxOffPolicySteps: 1, algorithmOf: () => custom });
    expect(drop).toEqual({ episodes: 1, groupsDropped: 1, groups: [] });
    expect(calls).toBe(1);
  });

  it('never counts an episode with no trainable trace as stale; falls back to the dispatch version', async () => {
    const frozen = makeEpisode({ traces: [servedTrace(1, 0, false)] });
    expect(episodeVersion(frozen, 5)).toBeNull();
    expect(episodeVersion(makeEpisode({ traces: [servedTrace(1)] }), 5)).toBe(5);
    expect(episodeVersion(makeEpisode({ traces: [servedTrace(1, 3), servedTrace(1, 4)] }), 5)).toBe(3);
  });
});
