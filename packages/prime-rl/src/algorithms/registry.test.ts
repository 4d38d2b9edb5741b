import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { Grpo } from './grpo.ts';
import { HierarchicalGrpo } from './hierarchical-grpo.ts';
import { MaxRl } from './max-rl.ts';
import { Rae } from './rae.ts';
import { AlgorithmConfigSchema, algorithmTypes, createAlgorithm, registerAlgorithm } from './registry.ts';
import { iterTrainableTraces } from './trainable-traces.ts';

describe('createAlgorithm', () => {
  it('builds each built-in from a config discriminated on type', () => {
    expect(createAlgorithm({ type: 'grpo' })).toBeInstanceOf(Grpo);
    expect(createAlgorithm({ type: 'hierarchical-grpo', episodeAgents: ['solver'] })).toBeInstanceOf(HierarchicalGrpo);
    expect(createAlgorithm({ type: 'rae', decay: 0.9 })).toMatchObject({ decay: 0.9 });
    expect(createAlgorithm({ type: 'rae' })).toBeInstanceOf(Rae);
    expect(createAlgorithm({ type: 'max-rl' })).toBeInstanceOf(MaxRl);
  });

  it('names the bad field', () => {
    expect(() => createAlgorithm({ type: 'ppo' })).toThrow(
      /algorithm\.type: unknown algorithm 'ppo'.*grpo, hierarchical-grpo, rae, max-rl/,
    );
    expect(() => createAlgorithm({})).toThrow(/algorithm\.type: required/);
    expect(() => createAlgorithm({ type: 'rae', decay: 2 })).toThrow(/algorithm\.decay/);
    expect(() => createAlgorithm({ type: 'rae', decya: 0.9 })).toThrow(/decya/);
    expect(() => createAlgorithm({ type: 'hierarchical-grpo' })).toThrow(/algorithm\.episodeAgents: .*required/);
    expect(() => createAlgorithm({ type: 'hierarchical-grpo', episodeAgents: [] })).toThrow(
      /algorithm\.episodeAgents: .*use `grpo`/,
    );
    expect(() => createAlgorithm({ type: 'grpo', lengthPenalty: { type: 'linear', numTurnsWeight: -1 } })).toThrow(
      /algorithm\.lengthPenalty\.numTurnsWeight/,
    );
    expect(() => createAlgorithm({ type: 'hierarchical-grpo', episodeAgents: ['solver', 3] })).toThrow(
      /algorithm\.episodeAgents\[1\]/,
    );
  });

  it('exposes the built-in configs as one zod union', () => {
    expect(AlgorithmConfigSchema.parse({ type: 'rae' })).toEqual({ type: 'rae', decay: 0.95 });
  });

  it('builds a user-registered algorithm that writes advantages', () => {
    registerAlgorithm({
      type: 'constant',
      schema: z.strictObject({ type: z.literal('constant'), value: z.number() }),
      create: (config) => ({
        type: 'constant',
        scoreGroup(episodes) {
          for (const trace of iterTrainableTraces(episodes)) assignAdvantages(trace, config.value);
        },
      }),
    });
    expect(algorithmTypes()).toContain('constant');
    const trace = makeTrace({ reward: 1 });
    createAlgorithm({ type: 'constant', value: 2 }).scoreGroup([makeEpisode({ traces: [trace] })]);
    expect(trace.nodes[0]!.advantage).toBe(2);
    expect(() => createAlgorithm({ type: 'constant', value: 'x' })).toThrow(/algorithm\.value/);
    expect(() => registerAlgorithm({ type: 'grpo', schema: z.any(), create: () => new Grpo() })).toThrow(/already/);
  });
});
