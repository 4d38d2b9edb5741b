import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { HierarchicalGrpo } from './hierarchical-grpo.ts';

const solvers = () => new HierarchicalGrpo({ type: 'hierarchical-grpo', episodeAgents: ['solver'] });

describe('HierarchicalGrpo', () => {
  it('reproduces the worked example: proposers [1,0], solvers ep1 [1,0], ep2 [1,1]', () => {
    const proposers = [makeTrace({ role: 'proposer', reward: 1 }), makeTrace({ role: 'proposer', reward: 0 })];
    const ep1 = [makeTrace({ role: 'solver', reward: 1 }), makeTrace({ role: 'solver', reward: 0 })];
    const ep2 = [makeTrace({ role: 'solver', reward: 1 }), makeTrace({ role: 'solver', reward: 1 })];
    solvers().scoreGroup([
      makeEpisode({ index: 0, traces: [proposers[0]!, ...ep1] }),
      makeEpisode({ index: 1, traces: [proposers[1]!, ...ep2] }),
    ]);
    const close = (traces: typeof ep1, expected: number[]) =>
      traces.forEach((t, i) => {
        expect(Math.abs(advantageOf(t)! - expected[i]!)).toBeLessThanOrEqual(1e-12);
      });
    close(proposers, [0.5, -0.5]);
    close(ep1, [0.5, -0.5]);
    close(ep2, [0, 0]);
    expect(advantageOf(ep2[0]!)).toBe(0);
  });

  it('gives 0 to singletons (one solver per episode, one proposer per group)', () => {
    const proposer = makeTrace({ role: 'proposer', reward: 0.8 });
    const solver = makeTrace({ role: 'solver', reward: 1 });
    solvers().scoreGroup([makeEpisode({ traces: [proposer, solver] })]);
    expect([advantageOf(proposer), advantageOf(solver)]).toEqual([0, 0]);
  });

  it('drops untrainable proposers but still centres solvers per episode', () => {
    const proposer = makeTrace({ role: 'proposer', reward: 1, trainable: false });
    const s = [makeTrace({ role: 'solver', reward: 1 }), makeTrace({ role: 'solver', reward: 0 })];
    solvers().scoreGroup([makeEpisode({ traces: [proposer, ...s] })]);
    expect(advantageOf(proposer)).toBeUndefined();
    expect(s.map(advantageOf)).toEqual([0.5, -0.5]);
  });

  it('refuses a config with no per-episode role, naming grpo', () => {
    expect(() => new HierarchicalGrpo({ type: 'hierarchical-grpo', episodeAgents: [] })).toThrow(/episodeAgents.*grpo/s);
  });

  it('refuses a single-role env (use grpo) and a zero-sum game (use rae)', () => {
    expect(() => solvers().validateEnv({ id: 'math', roles: ['solver'] })).toThrow(/single role.*`grpo`/);
    expect(() => solvers().validateEnv({ id: 'kuhn', roles: ['player0', 'player1'], zeroSum: true })).toThrow(/`rae`/);
    expect(() => solvers().validateEnv({ id: 'ps', roles: ['proposer', 'answerer'] })).toThrow(/'solver' is not a role/);
    expect(() => solvers().validateEnv({ id: 'ps', roles: ['proposer', 'solver'] })).not.toThrow();
  });

  describe('properties', () => {
    const roleNames = ['proposer', 'solver', 'critic'];
    const groupArbitrary = fc.array(
      fc.array(
        fc.record({
          role: fc.constantFrom(...roleNames),
          reward: fc.oneof(fc.constantFrom(0, 1), fc.double({ min: -10, max: 10, noNaN: true })),
          trainable: fc.boolean(),
          ok: fc.boolean(),
        }),
        { minLength: 0, maxLength: 6 },
      ),
      { minLength: 1, maxLength: 6 },
    );

    it('sums advantages to 0 per peer set, never mixes roles, and skips untrainable traces', () => {
      fc.assert(
        fc.property(groupArbitrary, fc.subarray(roleNames, { minLength: 1 }), (spec, episodeAgents) => {
          const episodes = spec.map((traces, index) =>
            makeEpisode({ index, id: `e${index}`, traces: traces.map((t) => makeTrace(t)) }),
          );
          new HierarchicalGrpo({ type: 'hierarchical-grpo', episodeAgents }).scoreGroup(episodes);
          const sets = new Map<string, { sum: number; scale: number; rewards: number[]; advantages: number[] }>();
          for (const episode of episodes) {
            for (const trace of episode.traces) {
              const advantage = advantageOf(trace);
              if (!trace.ok || !trace.agent.trainable) {
                expect(advantage).toBeUndefined();
                continue;
              }
              expect(advantage).toBeDefined();
              const role = trace.agent.name;
              const key = episodeAgents.includes(role) ? `${role}/${episode.id}` : role;
              const set = sets.get(key) ?? { sum: 0, scale: 1, rewards: [], advantages: [] };
              set.sum += advantage!;
              set.scale += Math.abs(trace.reward);
              set.rewards.push(trace.reward);
              set.advantages.push(advantage!);
              sets.set(key, set);
            }
          }
          for (const set of sets.values()) {
            expect(Math.abs(set.sum)).toBeLessThanOrEqual(1e-9 * set.scale);
            // the advantage depends only on the peers' rewards: r − mean over the peer set
            const mean = set.rewards.reduce((a, b) => a + b, 0) / set.rewards.length;
            set.rewards.forEach((r, i) => {
              expect(set.advantages[i]!).toBeCloseTo(r - mean, 9);
            });
          }
        }),
      );
    });

    it('scores a role the same whatever the other roles do', () => {
      fc.assert(
        fc.property(
          fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 8 }),
          fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 8 }),
          (proposerRewards, otherRewards) => {
            const alone = proposerRewards.map((reward) => makeTrace({ role: 'proposer', reward }));
            const mixed = proposerRewards.map((reward) => makeTrace({ role: 'proposer', reward }));
            solvers().scoreGroup(alone.map((t, index) => makeEpisode({ index, traces: [t] })));
            solvers().scoreGroup(
              mixed.map((t, index) =>
                makeEpisode({
                  index,
                  traces: [t, ...otherRewards.map((reward) => makeTrace({ role: 'solver', reward }))],
                }),
              ),
            );
            expect(mixed.map(advantageOf)).toEqual(alone.map(advantageOf));
          },
        ),
      );
    });
  });
});
