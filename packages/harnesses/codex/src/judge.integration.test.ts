import { installForIntegrationTest, runAgenticJudgeEpisode } from '@troupe/harness-kit';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { CODEX_PROGRAM, CodexHarness } from './codex-harness.ts';

// An `agentic-judge` episode whose judge is the real Codex CLI (cached in
// ~/.cache/troupe/harnesses) on the `local` runtime: the solver is the `bash` harness, and one
// scripted model (`agenticJudgeScript`) answers both, the judge through Codex's own OpenAI-responses dialect.

describe('agentic-judge with the real codex CLI as judge', () => {
  let unavailable: string | null = null;

  beforeAll(async () => {
    // Install once into the host cache (a no-op when the harness's own integration test ran).
    unavailable = await installForIntegrationTest({
      harness: new CodexHarness({ allowLocal: true }),
      packageName: CODEX_PROGRAM.packageName,
      timeoutMs: 600_000,
    });
  }, 660_000);

  it('scores the solver from the verdict codex wrote after re-running its file; the judge never trains', async (context) => {
    if (unavailable) context.skip(unavailable);
    // The env loads `codex` by id like any plugin; the spy only reads the rollout secret it is given.
    const launch = vi.spyOn(CodexHarness.prototype, 'launch');
    try {
      const episode = await runAgenticJudgeEpisode({
        judge: { id: 'codex', allowLocal: true, timeoutMs: 240_000 },
        // The judge, inside codex: one exec_command call, then a final text reply.
        judgeTool: { id: 'call_judge_1', name: 'exec_command', arguments: (cmd) => ({ cmd }) },
      });

      expect(episode.errors).toEqual([]);
      expect(episode.ok).toBe(true);
      const solver = episode.traces.find((t) => t.agent.name === 'solver');
      const judge = episode.traces.find((t) => t.agent.name === 'judge');
      expect(judge?.ok).toBe(true);
      expect(judge?.agent).toMatchObject({ harness: 'codex', trainable: false, runtime: 'local' });
      expect(judge?.calls.length).toBeGreaterThanOrEqual(2);
      expect(new Set(judge?.calls.map((c) => c.dialect))).toEqual(new Set(['responses']));
      expect(judge?.calls[0]?.finishReason).toBe('tool_calls');
      expect(judge?.info.artifacts).toEqual({ restored: ['answer.sh'], missing: [] });
      expect(judge?.info.verdict).toMatchObject({
        score: 1,
        verdicts: [{ name: 'solved', verdict: 'yes', reason: 'sh answer.sh printed 42' }],
      });
      expect(solver?.agent.trainable).toBe(true);
      expect(solver?.metrics['judge/solved']).toBe(1);
      expect(solver?.rewards.judge).toEqual({ score: 1, weight: 1 });

      expect(launch).toHaveBeenCalledTimes(1);
      const secret = launch.mock.calls[0]?.[0].endpoint.secret ?? '';
      expect(secret).toMatch(/^rs-/);
      for (const trace of episode.traces) expect(JSON.stringify(trace.toJSON())).not.toContain(secret);
    } finally {
      launch.mockRestore();
    }
  }, 300_000);
});
