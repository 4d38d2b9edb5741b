import { Episode, Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { errorEpisodes, fixtureEpisodes, judgeEpisode, kuhnEpisode, toJsonl } from './__fixtures__/fixture-run.ts';
import { parseTracesJsonl, type ViewerRun } from './run-directory.ts';
import { buildRunIndex, histogram, ViewerIndexSchema } from './run-index.ts';

function runOf(episodes: Episode[]): ViewerRun {
  const { episodes: parsed } = parseTracesJsonl({ text: toJsonl(episodes) });
  return { runDir: '/runs/r', name: 'r', config: { model: 'm' }, summary: null, episodes: parsed, warnings: [] };
}

describe('buildRunIndex', () => {
  it('produces an index matching ViewerIndexSchema with one row per episode', () => {
    const index = buildRunIndex(runOf(fixtureEpisodes()));
    expect(ViewerIndexSchema.parse(index)).toBeTruthy();
    expect(index.episodes).toHaveLength(fixtureEpisodes().length);
    expect(index.roles.map((r) => r.name)).toEqual(['solver', 'judge', 'proposer', 'player0', 'player1']);
  });

  it('averages rewards per role over ok traces and counts errored traces apart (a failure is not a 0)', () => {
    const episodes = [
      judgeEpisode({ index: 0, rollout: 0, solved: true, start: 0 }),
      judgeEpisode({ index: 0, rollout: 1, solved: false, start: 0 }),
      judgeEpisode({ index: 0, rollout: 2, solved: true, start: 0 }),
      ...errorEpisodes(0).slice(0, 2),
    ];
    const solver = buildRunIndex(runOf(episodes)).roles.find((r) => r.name === 'solver')!;
    expect(solver.traces).toBe(5);
    expect(solver.errored).toBe(2);
    expect(solver.scored).toBe(3);
    expect(solver.rewardMean).toBeCloseTo(2 / 3, 12);
    expect(solver.histogram).toEqual({ min: 0, max: 1, counts: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2] });
    expect(solver.rewardParts.find((p) => p.name === 'judge')).toEqual({ name: 'judge', mean: 2 / 3, weight: 1, n: 3 });
    expect(solver.metrics.find((m) => m.name === 'judge/solved')).toEqual({ name: 'judge/solved', mean: 2 / 3, n: 3 });
  });

  it('wall time counts the episodes running, not the idle hour before a resume', () => {
    const before = judgeEpisode({ index: 0, rollout: 0, solved: true, start: 0 });
    const resumed = judgeEpisode({ index: 1, rollout: 0, solved: true, start: 3_600_000 });
    const ran = (e: Episode) => (e.endedAt ?? 0) - e.startedAt;
    expect(ran(before)).toBeGreaterThan(0);
    const index = buildRunIndex(runOf([before, resumed]));
    expect(index.totals.wallMs).toBe(ran(before) + ran(resumed));
  });

  it('computes pass@k per task over the scored traces of a role with rewards in [0, 1]', () => {
    // Task sum-to-20: 1 of 4 solved; task sum-to-27: 4 of 4 solved.
    const episodes = [0, 1, 2, 3].flatMap((rollout) => [
      judgeEpisode({ index: 0, rollout, solved: rollout === 0, start: 0 }),
      judgeEpisode({ index: 1, rollout, solved: true, start: 0 }),
    ]);
    const solver = buildRunIndex(runOf(episodes)).roles.find((r) => r.name === 'solver')!;
    expect(solver.passAtK.map((p) => p.k)).toEqual([1, 2, 4]);
    expect(solver.passAtK[0]!.value).toBeCloseTo((0.25 + 1) / 2, 12);
    expect(solver.passAtK[1]!.value).toBeCloseTo((0.5 + 1) / 2, 12);
    expect(solver.passAtK[2]!.value).toBeCloseTo(1, 12);
  });

  it('gives no pass@k for a role whose rewards leave [0, 1] (poker payoffs)', () => {
    const index = buildRunIndex(runOf([0, 1, 2, 3, 4, 5].map((i) => kuhnEpisode({ index: i, start: 0 }))));
    const p0 = index.roles.find((r) => r.name === 'player0')!;
    const p1 = index.roles.find((r) => r.name === 'player1')!;
    expect(p0.passAtK).toEqual([]);
    expect(p0.rewardMean).toBeCloseTo(-p1.rewardMean!, 12);
  });

  it('counts errors by type with their stages, and stop conditions', () => {
    const index = buildRunIndex(runOf(errorEpisodes(0)));
    const byType = Object.fromEntries(index.errors.map((e) => [e.type, e]));
    expect(Object.keys(byType).sort()).toEqual(['ParseError', 'ProviderError', 'SandboxError', 'TimeoutError']);
    expect(byType.SandboxError!.stages).toEqual({ boot: 1 });
    expect(byType.ParseError!.stages).toEqual({ env: 1 });
    expect(byType.ProviderError!.example).toMatch(/502 Bad Gateway/);
    expect(index.stopConditions).toEqual({ error: 3, agent_completed: 1 });
    expect(index.totals.failedCalls).toBe(1);
    expect(index.totals.okEpisodes).toBe(0);
  });

  it('fills each row with rewards per role, turns, tokens and search text', () => {
    const index = buildRunIndex(runOf([judgeEpisode({ index: 0, rollout: 0, solved: true, start: 1000 }), ...errorEpisodes(0)]));
    const row = index.episodes[0]!;
    expect(row.rewards).toEqual({ solver: 1, judge: null });
    // Solver: tool call + answer; judge: re-run, write verdict, done.
    expect(row.turns).toBe(5);
    expect(row.tokens).toBeGreaterThan(0);
    expect(row.ok).toBe(true);
    expect(row.text).toContain('what is the sum of the integers from 1 to 20');
    const failed = index.episodes.find((r) => r.id === 'error-provider')!;
    expect(failed.ok).toBe(false);
    expect(failed.errors).toEqual(['ProviderError']);
    expect(failed.rewards).toEqual({ solver: null });
    expect(failed.text).toContain('502 bad gateway');
  });
});

describe('histogram', () => {
  it('uses [0, 1] for unit rewards and the data range otherwise, with max in the last bin', () => {
    expect(histogram([0, 1, 1], 2)).toEqual({ min: 0, max: 1, counts: [1, 2] });
    expect(histogram([-2, -1, 1, 2], 4)).toEqual({ min: -2, max: 2, counts: [1, 1, 0, 2] });
    expect(histogram([3, 3], 2)).toEqual({ min: 2.5, max: 3.5, counts: [0, 2] });
    expect(histogram([])).toBeNull();
  });
});

describe('buildRunIndex costs', () => {
  /** One episode: a solver call on `model` (usage without a provider cost) and one rubric judge call. */
  function pricedEpisode(model: string): Episode {
    const task = { key: 't', hash: 'h', data: {} };
    const episode = new Episode({ id: `e-${model}`, env: { id: 'single-agent' }, task, group: { id: 'g', index: 0 } });
    const trace = new Trace({ task, agent: { name: 'solver', trainable: true, model } });
    trace.recordCall(
      { model, messages: [{ role: 'user', content: 'q' }], sampling: {} },
      {
        id: 'r',
        model,
        message: { role: 'assistant', content: 'a' },
        finishReason: 'stop',
        usage: { promptTokens: 1000, completionTokens: 500 },
      },
      { dialect: 'openai-chat', startedAt: 0, durationMs: 1 },
    );
    const judgeUsage = { promptTokens: 2000, completionTokens: 100 };
    trace.info.judgeCalls = [{ judge: 'rubric', model: 'judge-model', usage: judgeUsage, durationMs: 1 }];
    trace.extraUsage.push(judgeUsage);
    trace.recordReward('rubric', 1);
    episode.traces.push(trace);
    episode.endedAt = 1;
    return episode;
  }
  const runWith = (episodes: Episode[], prices: unknown): ViewerRun => ({ ...runOf(episodes), config: { model: 'm', prices } });

  it("prices calls without a provider cost from config.json's [prices], as summary.json does, judges apart", () => {
    const prices = { 'priced-model': { input: 1, output: 4 }, 'judge-model': { input: 0.5, output: 2 } };
    const index = buildRunIndex(runWith([pricedEpisode('priced-model'), pricedEpisode('unknown-model')], prices));
    const solver = index.roles.find((r) => r.name === 'solver')!;
    const agent = (1000 * 1 + 500 * 4) / 1e6;
    const judge = (2000 * 0.5 + 100 * 2) / 1e6;
    // The unknown model's call has no cost (never a 0 that looks known): 3 of 4 calls are costed.
    expect(solver.tokens.costedCalls).toBe(3);
    expect(solver.tokens.cost).toBeCloseTo(agent + 2 * judge, 12);
    expect(solver.tokens.judgeCost).toBeCloseTo(2 * judge, 12);
    expect(index.totals.tokens.cost).toBeCloseTo(agent + 2 * judge, 12);
    expect(index.episodes.map((row) => row.cost)).toEqual([expect.closeTo(agent + judge, 12), expect.closeTo(judge, 12)]);
  });

  it('without a price table counts only provider costs; a malformed table is a warning, not a crash', () => {
    expect(buildRunIndex(runWith([pricedEpisode('priced-model')], undefined)).roles[0]?.tokens).toMatchObject({
      cost: 0,
      costedCalls: 0,
    });
    const bad = buildRunIndex(runWith([pricedEpisode('priced-model')], { 'priced-model': { input: -1, output: 1 } }));
    expect(bad.roles[0]?.tokens.costedCalls).toBe(0);
    expect(bad.run.warnings.join('\n')).toMatch(/^config\.json prices: .*provider-reported ones only$/m);
  });
});
