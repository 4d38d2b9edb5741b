import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { createAlgorithm } from './registry.ts';

describe('every built-in algorithm', () => {
  const configs = [
    { type: 'grpo' },
    { type: 'grpo', lengthPenalty: { type: 'linear' } },
    { type: 'hierarchical-grpo', episodeAgents: ['solver'] },
    { type: 'rae' },
    { type: 'max-rl' },
  ];

  it('gives advantages to exactly the trainable traces (ok, trainable, with sampled tokens)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...configs),
        fc.array(
          fc.array(
            fc.record({
              role: fc.constantFrom('proposer', 'solver'),
              reward: fc.double({ min: -2, max: 2, noNaN: true }),
              trainable: fc.boolean(),
              ok: fc.boolean(),
              silent: fc.boolean(),
            }),
            { maxLength: 5 },
          ),
          { minLength: 1, maxLength: 5 },
        ),
        (config, spec) => {
          const episodes = spec.map((traces, index) =>
            makeEpisode({
              index,
              traces: traces.map((t) => makeTrace({ ...t, turns: [{ prompt: [1], completion: t.silent ? [] : [2, 3] }] })),
            }),
          );
          createAlgorithm(config).scoreGroup(episodes);
          spec.forEach((traces, e) => {
            traces.forEach((t, i) => {
              const advantage = advantageOf(episodes[e]!.traces[i]!);
              if (t.ok && t.trainable && !t.silent) expect(Number.isFinite(advantage)).toBe(true);
              else expect(advantage).toBeUndefined();
            });
          });
        },
      ),
    );
  });
});
