import type { Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { makeEpisode, makeTrace } from '../algorithms/__fixtures__/episodes.ts';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { HierarchicalGrpo } from '../algorithms/hierarchical-grpo.ts';
import { flattenRoleMetrics, roleMetrics } from './role-metrics.ts';

describe('roleMetrics', () => {
  it('reports rewards, advantages, zero-advantage fraction and tokens per role', () => {
    const episodes = [
      makeEpisode({
        index: 0,
        traces: [
          makeTrace({ role: 'proposer', reward: 1 }),
          makeTrace({ role: 'solver', reward: 1 }),
          makeTrace({ role: 'solver', reward: 0 }),
        ],
      }),
      makeEpisode({
        index: 1,
        traces: [
          makeTrace({ role: 'proposer', reward: 0 }),
          makeTrace({ role: 'solver', reward: 1 }),
          makeTrace({ role: 'solver', reward: 1 }),
          makeTrace({ role: 'solver', reward: 5, ok: false }),
        ],
      }),
    ];
    new HierarchicalGrpo({ type: 'hierarchical-grpo', episodeAgents: ['solver'] }).scoreGroup(episodes);
    const metrics = roleMetrics({ episodes });
    expect(Object.keys(metrics)).toEqual(['proposer', 'solver']);
    expect(metrics.proposer).toEqual({
      traces: 2,
      trainableTraces: 2,
      failedTraces: 0,
      reward: { mean: 0.5, min: 0, max: 1 },
      advantage: { mean: 0, std: 0.5 },
      zeroAdvantageFraction: 0,
      tokens: { total: 6, sampled: 2 },
    });
    expect(metrics.solver).toMatchObject({
      traces: 5,
      trainableTraces: 4,
      failedTraces: 1,
      reward: { mean: 0.75, min: 0, max: 1 },
      zeroAdvantageFraction: 0.5,
      tokens: { total: 12, sampled: 4 },
    });
    expect(metrics.solver!.advantage.std).toBeCloseTo(Math.sqrt(0.125), 12);
    expect(flattenRoleMetrics({ metrics, prefix: 'train/ps' })).toMatchObject({
      'train/ps/proposer/reward/mean': 0.5,
      'train/ps/solver/zeroAdvantageFraction': 0.5,
    });
  });

  it("reads a node's one advantage and per-token advantages alike: each sampled token counts once", () => {
    const turns = [
      { prompt: [1], completion: [2, 3] },
      { prompt: [4], completion: [5, 6, 7] },
    ];
    const scalar = makeTrace({ reward: 1, turns });
    const perToken = makeTrace({ reward: 1, turns });
    const zero = makeTrace({ reward: 0, turns });
    assignAdvantages(scalar, 0.5);
    assignAdvantages(perToken, [0.5, 0.5, 0.5, 0.5, 0.5]);
    assignAdvantages(zero, 0);
    const of = (trace: Trace) => roleMetrics({ episodes: [makeEpisode({ traces: [trace] })] }).solver!;
    expect(of(scalar)).toEqual(of(perToken));
    expect(of(scalar)).toMatchObject({ advantage: { mean: 0.5 }, zeroAdvantageFraction: 0, tokens: { sampled: 5 } });
    expect(of(zero)).toMatchObject({ advantage: { mean: 0 }, zeroAdvantageFraction: 1 });
    // Mixed forms over the tokens of one trace: (2 × 1 + 3 × 2) / 5.
    scalar.nodes[0]!.advantage = 1;
    scalar.nodes[1]!.advantage = undefined;
    scalar.nodes[1]!.advantages = [2, 2, 2];
    expect(of(scalar).advantage.mean).toBeCloseTo(8 / 5, 12);
  });

  it('reports null statistics for a role with no ok or scored trace', () => {
    const metrics = roleMetrics({ episodes: [makeEpisode({ traces: [makeTrace({ role: 'judge', ok: false })] })] });
    expect(metrics.judge).toMatchObject({
      reward: { mean: null },
      advantage: { mean: null, std: null },
      zeroAdvantageFraction: null,
    });
  });
});
