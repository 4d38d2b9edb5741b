import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerHarness } from '../../src/agent/plugins.ts';
import { singleAgentEnv } from '../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../src/env/env.ts';
import { runEval } from '../../src/eval/eval-runner.ts';
import type { Harness, HarnessLaunchContext, HarnessResult } from '../../src/harness/harness.ts';
import type { LocalSandbox } from '../../src/runtime/local-runtime.ts';
import { type ScriptedClient, scriptedClient } from '../../src/testing/scripted-model-server.ts';
import { reliabilityTaskset, taskIndexOf } from './support/arithmetic-script.ts';

type EpisodeLine = { ok: boolean; task: { key: string }; traces: { ok: boolean; errors: { type: string; message: string }[] }[] };

const readLines = (dir: string): EpisodeLine[] =>
  readFileSync(join(dir, 'traces.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as EpisodeLine);

/** Tasks with an odd index lose their sandbox mid-rollout. */
const dies = (index: number) => index % 2 === 1;

/**
 * An external program that prints its process group id and sleeps; the test kills the group and
 * removes the sandbox directory under it, as a crashed host or an operator would.
 */
class DoomedProgramHarness implements Harness {
  readonly id = 'doomed-program';
  readonly capabilities = {
    executesCode: true,
    needsContainer: false,
    supportsMcp: false,
    supportsResume: false,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const index = Number(context.task.key.replace('reliability-', ''));
    const sandbox = context.sandbox as LocalSandbox;
    if (!dies(index)) return sandbox.exec(['sh', '-c', 'echo survived']);
    return sandbox.exec(['sh', '-c', 'echo $$; exec sleep 30'], {
      timeoutMs: 20_000,
      onStdout: (chunk) => {
        // `$$` is a pid inside the sandbox's PID namespace (when root), not a host pid: kill the
        // program through the sandbox, which reaches every process it started.
        if (!Number.isInteger(Number(chunk.trim()))) return;
        rmSync(sandbox.root, { recursive: true, force: true });
        void sandbox.killAll();
      },
    });
  }
}

describe('a sandbox that dies mid-rollout (local runtime)', () => {
  let scripted: ScriptedClient;
  beforeAll(async () => {
    scripted = await scriptedClient({
      script: (request) => {
        const index = taskIndexOf(request) ?? 0;
        const last = request.messages.at(-1);
        if (last?.role === 'user') return { toolCalls: [{ name: 'bash', arguments: { command: 'echo "$SANDBOX_ROOT"' } }] };
        if (last?.role === 'tool' && dies(index) && !last.content.includes('error')) {
          const root = last.content.match(/stdout:\n<<<\S+\n(.*)\n/)?.[1];
          // The sandbox directory disappears while the model "thinks".
          if (root && existsSync(root)) {
            rmSync(root, { recursive: true, force: true });
            return { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] };
          }
        }
        return 'Done. 0';
      },
    });
  });
  afterAll(() => scripted.close());

  it('records a SandboxError on the trace of each rollout whose sandbox directory was removed, and the run goes on', async () => {
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'bash', runtime: 'local' } },
      run: { model: 'scripted-model', client: scripted.client },
    });
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-sandbox-death-'));
    await runEval({ env, taskset: reliabilityTaskset(6), outDir, model: 'scripted-model', concurrency: 3 });
    const episodes = readLines(outDir);
    expect(episodes).toHaveLength(6);
    for (const episode of episodes) {
      const index = Number(episode.task.key.replace('reliability-', ''));
      const errors = episode.traces[0]?.errors ?? [];
      if (dies(index))
        expect(
          errors.map((e) => e.type),
          episode.task.key,
        ).toEqual(['SandboxError']);
      else expect(errors, episode.task.key).toEqual([]);
    }
  });

  it('records a SandboxError when the program is killed with its sandbox, and the run goes on', async () => {
    registerHarness('doomed_program', () => new DoomedProgramHarness());
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'doomed-program', runtime: 'local' } },
      run: { model: 'scripted-model', client: scripted.client },
      interception: async () => ({ register: () => ({ baseUrl: 'http://127.0.0.1:9/v1' }), unregister: () => {} }),
    });
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-sandbox-death-'));
    await runEval({ env, taskset: reliabilityTaskset(4), outDir, model: 'scripted-model', concurrency: 4 });
    const episodes = readLines(outDir);
    expect(episodes).toHaveLength(4);
    for (const episode of episodes) {
      const index = Number(episode.task.key.replace('reliability-', ''));
      const errors = episode.traces[0]?.errors ?? [];
      if (dies(index))
        expect(
          errors.map((e) => e.type),
          episode.task.key,
        ).toEqual(['SandboxError']);
      else expect(errors, episode.task.key).toEqual([]);
    }
  });
});
