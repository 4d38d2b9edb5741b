import { npmRegistryReachable } from '@troupe/harness-kit';
import {
  agenticJudgeEnv,
  contentText,
  Env,
  type Episode,
  InterceptionServer,
  LocalRuntime,
  type ModelRequest,
  Task,
} from '@troupe/verifiers';
import { type ScriptedClient, type ScriptedReply, scriptedClient } from '@troupe/verifiers/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CODEX_PROGRAM, CodexHarness } from './codex-harness.ts';

// An `agentic-judge` episode whose judge is the real Codex CLI (cached in
// ~/.cache/troupe/harnesses) on the `local` runtime: the solver is the `bash` harness, and one
// scripted model answers both, the judge through Codex's own OpenAI-responses dialect.

const VERDICT_PATH = /write the file (\S+) containing/;
const textOf = (request: ModelRequest) => request.messages.map((m) => contentText(m.content)).join('\n');
const toolNames = (request: ModelRequest) => (request.tools ?? []).map((t) => t.name);
const answered = (request: ModelRequest) => request.messages.some((m) => m.role === 'tool');

/** The judge re-runs the solver's script, then writes its verdict where its prompt says. */
const judgeCommand = (verdictPath: string) =>
  `if [ "$(sh answer.sh)" = 42 ]; then v=yes; else v=no; fi; printf '{"verdicts":[{"name":"solved","reason":"sh answer.sh printed %s","verdict":"%s"}]}' "$(sh answer.sh)" "$v" > ${verdictPath}`;

function script(request: ModelRequest): ScriptedReply | string {
  if (toolNames(request).includes('exec_command')) {
    // The judge, inside codex: one exec_command call, then a final text reply.
    if (answered(request)) return 'Verdict written.';
    const path = VERDICT_PATH.exec(textOf(request))?.[1];
    if (!path) return { error: { status: 400, message: 'the judge prompt names no verdict path' } };
    return { toolCalls: [{ id: 'call_judge_1', name: 'exec_command', arguments: { cmd: judgeCommand(path) } }] };
  }
  // The solver, through the `bash` harness.
  if (answered(request)) return 'Done: answer.sh prints 42.';
  return { toolCalls: [{ name: 'bash', arguments: { command: "printf 'echo $((6 * 7))\\n' > answer.sh" } }] };
}

describe('agentic-judge with the real codex CLI as judge', () => {
  let unavailable: string | null = null;
  let model: ScriptedClient;
  let interception: InterceptionServer;

  beforeAll(async () => {
    model = await scriptedClient({ script });
    interception = new InterceptionServer();
    await interception.start();
    // Install once into the host cache (a no-op when the harness's own integration test ran).
    const runtime = new LocalRuntime();
    const sandbox = await runtime.createSandbox();
    try {
      await new CodexHarness({ allowLocal: true }).setup({ sandbox, log: () => undefined, signal: AbortSignal.timeout(600_000) });
    } catch (error) {
      if (!(await npmRegistryReachable())) unavailable = `npm registry unreachable, cannot install ${CODEX_PROGRAM.packageName}`;
      else throw error;
    } finally {
      await sandbox.stop();
      await runtime.close?.();
    }
  }, 660_000);

  afterAll(async () => {
    await interception?.close();
    await model?.close();
  });

  it('scores the solver from the verdict codex wrote after re-running its file; the judge never trains', async (context) => {
    if (unavailable) context.skip(unavailable);
    // The env loads `codex` by id like any plugin; the spy only reads the rollout secret it is given.
    const launch = vi.spyOn(CodexHarness.prototype, 'launch');
    try {
      const env = await Env.create({
        definition: agenticJudgeEnv,
        config: {
          id: 'agentic-judge',
          solver: { harness: 'bash' },
          judge: { harness: { id: 'codex', allowLocal: true, timeoutMs: 240_000 } },
        },
        run: { model: 'policy-model', client: model.client },
        interception: () => Promise.resolve(interception),
      });
      const task = new Task({ prompt: 'Write a shell script answer.sh that prints 6 * 7.', artifacts: ['answer.sh'] });
      const episode: Episode = await env.runEpisode({ task, group: { id: 'g', index: 0 } });

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
