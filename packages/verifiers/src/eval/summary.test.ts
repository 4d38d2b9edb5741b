import { describe, expect, it } from 'vitest';
import { Episode } from '../trace/episode.ts';
import { Trace } from '../trace/trace.ts';
import { activeMs, formatSummary, summarize } from './summary.ts';

type Role = { name: string; trainable: boolean; rewards?: Record<string, number | null> };

/** One episode on `taskKey` with one trace per role; `rewards` are recorded as the env would. */
function episode(taskKey: string, roles: Role[], at: { start: number; end: number } = { start: 0, end: 1 }): Episode {
  const task = { key: taskKey, hash: taskKey, data: {} };
  const out = new Episode({ env: { id: 'test' }, task, group: { id: taskKey, index: 0 } });
  for (const role of roles) {
    const trace = new Trace({ task, agent: { name: role.name, trainable: role.trainable } });
    for (const [name, score] of Object.entries(role.rewards ?? {})) {
      if (score === null) trace.rewards[name] = null;
      else trace.recordReward(name, score);
    }
    out.traces.push(trace);
  }
  out.startedAt = at.start;
  out.endedAt = at.end;
  return out;
}

describe('summarize: roles that are never scored', () => {
  const userSim = [1, 2, 3].map((i) =>
    episode(`t${i}`, [
      { name: 'assistant', trainable: true, rewards: { correct: 1 } },
      { name: 'user', trainable: false },
    ]),
  );

  it('reports a frozen user as not scored, not as reward mean 0', () => {
    const summary = summarize({ episodes: userSim, env: 'user-sim', model: 'm' });
    expect(summary.byRole.user).toMatchObject({ scored: 0, trainable: false, rewardMean: null, passAtK: {} });
    expect(summary.byRole.assistant).toMatchObject({ scored: 3, rewardMean: 1, passAtK: { 'pass@1': 1 } });
    expect(summary.primaryRole).toBe('assistant');
    expect(summary.passAtK).toEqual({ 'pass@1': 1 });
    const text = formatSummary(summary);
    expect(text).toMatch(/user: not scored \(frozen\), 3\/3 ok traces/);
    expect(text).not.toMatch(/user: reward mean/);
    expect(text).toMatch(/assistant: reward mean 1\.000 .*pass@1 1\.000/);
  });

  it('an explicit primary role that is never scored does not get a top-level reward', () => {
    const summary = summarize({ episodes: userSim, env: 'user-sim', model: 'm', primaryRole: 'user' });
    expect(summary.primaryRole).toBe('assistant');
    expect(summary.rewardMean).toBe(1);
  });

  it('a judge whose reward is recorded as null is not scored either', () => {
    const episodes = [
      episode('t', [
        { name: 'solver', trainable: true, rewards: { judge: 1 } },
        { name: 'judge', trainable: false, rewards: { judge: null } },
      ]),
    ];
    const summary = summarize({ episodes, env: 'agentic-judge', model: 'm' });
    expect(summary.byRole.judge?.scored).toBe(0);
    expect(formatSummary(summary)).toMatch(/judge: not scored \(frozen\)/);
  });

  it('pass@k is per role: a proposer-solver run does not report the proposer learnability as pass@1', () => {
    const episodes = [1, 2].map((i) =>
      episode(`p${i}`, [
        { name: 'proposer', trainable: true, rewards: { learnability: 0 } },
        { name: 'solver', trainable: true, rewards: { correct: 1 } },
        { name: 'solver', trainable: true, rewards: { correct: 1 } },
      ]),
    );
    const summary = summarize({ episodes, env: 'proposer-solver', model: 'm' });
    expect(summary.byRole.solver?.passAtK).toEqual({ 'pass@1': 1, 'pass@2': 1 });
    expect(summary.byRole.proposer?.passAtK).toEqual({ 'pass@1': 0 });
    expect(summary.primaryRole).toBeNull();
    expect(summary.passAtK).toEqual({});
    expect(summary.rewardMean).toBeNull();
    expect(formatSummary(summary)).toMatch(/solver: reward mean 1\.000 .*pass@1 1\.000 {2}pass@2 1\.000/);
  });
});

it('gives no pass@k for rewards outside [0, 1] (poker payoffs are not pass/fail)', () => {
  const episodes = [
    episode('deal', [
      { name: 'player0', trainable: true, rewards: { payoff: 2 } },
      { name: 'player1', trainable: true, rewards: { payoff: -2 } },
    ]),
  ];
  const summary = summarize({ episodes, env: 'kuhn-poker', model: 'm' });
  expect(summary.byRole.player0?.passAtK).toEqual({});
  expect(summary.byRole.player1?.rewardMean).toBe(-2);
});

describe('wall time', () => {
  it('counts the time episodes ran, not the idle gap before a resume', () => {
    const first = episode('a', [{ name: 'agent', trainable: true, rewards: { correct: 1 } }], { start: 0, end: 10_000 });
    const overlap = episode('b', [{ name: 'agent', trainable: true, rewards: { correct: 1 } }], { start: 5_000, end: 12_000 });
    const resumedAnHourLater = episode('c', [{ name: 'agent', trainable: true, rewards: { correct: 1 } }], {
      start: 3_600_000,
      end: 3_603_000,
    });
    const summary = summarize({ episodes: [first, overlap, resumedAnHourLater], env: 'e', model: 'm' });
    expect(summary.wallSeconds).toBe(15);
  });

  it('activeMs merges overlapping and touching intervals and skips open ones', () => {
    expect(activeMs([])).toBe(0);
    expect(
      activeMs([
        { start: 10, end: 20 },
        { start: 0, end: 5 },
        { start: 5, end: 7 },
        { start: 15, end: 30 },
        { start: 40, end: null },
      ]),
    ).toBe(27);
  });
});
