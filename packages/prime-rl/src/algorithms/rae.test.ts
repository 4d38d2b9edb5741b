import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advantageOf, makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import { Rae } from './rae.ts';

describe('Rae', () => {
  it('uses the baseline before updating it: decay 0.5, two solo traces r=1 → [1.0, 0.5]', () => {
    const traces = [makeTrace({ role: 'solo', reward: 1 }), makeTrace({ role: 'solo', reward: 1 })];
    const rae = new Rae({ type: 'rae', decay: 0.5 });
    rae.scoreGroup([makeEpisode({ traces })]);
    expect(Math.abs(advantageOf(traces[0]!)! - 1)).toBeLessThanOrEqual(1e-12);
    expect(Math.abs(advantageOf(traces[1]!)! - 0.5)).toBeLessThanOrEqual(1e-12);
    expect(rae.baseline({ env: 'env', role: 'solo' })).toBe(0.75);
  });

  it('keeps one baseline per role: player0/player1 [+1,−1] over two calls → [1,−1] then [.5,−.5]', () => {
    const rae = new Rae({ type: 'rae', decay: 0.5 });
    const round = () => {
      const traces = [makeTrace({ role: 'player0', reward: 1 }), makeTrace({ role: 'player1', reward: -1 })];
      rae.scoreGroup([makeEpisode({ traces })]);
      return traces.map(advantageOf);
    };
    const close = (actual: (number | undefined)[], expected: number[]) =>
      actual.forEach((a, i) => {
        expect(Math.abs(a! - expected[i]!)).toBeLessThanOrEqual(1e-12);
      });
    close(round(), [1, -1]);
    close(round(), [0.5, -0.5]);
  });

  it('keeps separate baselines per env, and defaults to decay 0.95', () => {
    const rae = new Rae();
    expect(rae.decay).toBe(0.95);
    rae.scoreGroup([makeEpisode({ env: 'a', traces: [makeTrace({ role: 'p', reward: 1 })] })]);
    const other = makeTrace({ role: 'p', reward: 1 });
    rae.scoreGroup([makeEpisode({ env: 'b', traces: [other] })]);
    expect(advantageOf(other)).toBe(1);
    expect(rae.baseline({ env: 'a', role: 'p' })).toBeCloseTo(0.05, 15);
  });

  it('matches a per-(env, role) reference over one group mixing two envs and three roles', () => {
    const roles = ['a', 'b', 'c', 'b', 'a', 'c', 'c', 'a'];
    const envs = ['x', 'x', 'y', 'x', 'y', 'y', 'x', 'x'];
    const rewards = [1, 0.25, -1, 0.5, 2, 0, 1, -0.5];
    const episodes = roles.map((role, i) =>
      makeEpisode({ env: envs[i]!, traces: [makeTrace({ role, reward: rewards[i]! }), makeTrace({ role: 'b', reward: i })] }),
    );
    const rae = new Rae({ type: 'rae', decay: 0.75 });
    rae.scoreGroup(episodes);
    const reference = new Map<string, number>();
    const expected: number[] = [];
    episodes.forEach((episode, i) => {
      for (const [role, reward] of [
        [roles[i]!, rewards[i]!],
        ['b', i],
      ] as const) {
        const key = `${envs[i]}/${role}`;
        const before = reference.get(key) ?? 0;
        expected.push(reward - before);
        reference.set(key, 0.75 * before + 0.25 * reward);
      }
    });
    expect(episodes.flatMap((episode) => episode.traces.map(advantageOf))).toEqual(expected);
    for (const [key, value] of reference) {
      const [env, role] = key.split('/') as [string, string];
      expect(rae.baseline({ env, role })).toBe(value);
    }
  });

  it('never lets errored or untrainable traces touch the baseline', () => {
    const rae = new Rae({ type: 'rae', decay: 0.5 });
    const skipped = [makeTrace({ role: 'p', reward: 5, ok: false }), makeTrace({ role: 'p', reward: 5, trainable: false })];
    rae.scoreGroup([makeEpisode({ traces: skipped })]);
    expect(skipped.map(advantageOf)).toEqual([undefined, undefined]);
    expect(rae.baseline({ env: 'env', role: 'p' })).toBe(0);
  });

  it('saves and restores its baselines through a checkpoint (JSON round trip)', () => {
    const rae = new Rae({ type: 'rae', decay: 0.5 });
    rae.scoreGroup([makeEpisode({ traces: [makeTrace({ role: 'p', reward: 1 })] })]);
    const restored = new Rae({ type: 'rae', decay: 0.5 });
    restored.loadState(JSON.parse(JSON.stringify(rae.state())));
    const a = makeTrace({ role: 'p', reward: 0 });
    const b = makeTrace({ role: 'p', reward: 0 });
    rae.scoreGroup([makeEpisode({ traces: [a] })]);
    restored.scoreGroup([makeEpisode({ traces: [b] })]);
    expect(advantageOf(b)).toBe(advantageOf(a));
    expect(advantageOf(b)).toBe(-0.5);
  });

  it('rejects a malformed state naming the field', () => {
    expect(() => new Rae().loadState({ version: 1, decay: 0.95, baselines: { env: { p: 'x' } } })).toThrow(
      /state\.baselines\.env\.p/,
    );
  });

  it('refuses decay outside [0, 1)', () => {
    expect(() => new Rae({ type: 'rae', decay: 1 })).toThrow(/decay/);
    expect(() => new Rae({ type: 'rae', decay: -0.1 })).toThrow();
  });

  it('with one role equals REINFORCE with an independently computed EMA baseline', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        fc.array(fc.array(fc.double({ min: -5, max: 5, noNaN: true }), { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 8,
        }),
        (decay, groups) => {
          const rae = new Rae({ type: 'rae', decay });
          let baseline = 0;
          for (const rewards of groups) {
            const traces = rewards.map((reward) => makeTrace({ role: 'solo', reward }));
            rae.scoreGroup(traces.map((trace, index) => makeEpisode({ index, traces: [trace] })));
            rewards.forEach((reward, i) => {
              // Exact, but for the sign of zero: a reward of -0 sums to +0 on the trace (`+ 0` maps -0 to 0).
              expect((advantageOf(traces[i]!) ?? Number.NaN) + 0).toBe(reward - baseline + 0);
              baseline = baseline * decay + reward * (1 - decay);
            });
          }
        },
      ),
    );
  });
});
