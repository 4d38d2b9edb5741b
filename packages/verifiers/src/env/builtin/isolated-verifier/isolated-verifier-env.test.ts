import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRuntime } from '../../../agent/plugins.ts';
import { SandboxError } from '../../../errors/troupe-error.ts';
import type { ModelRequest } from '../../../model/model-client.ts';
import { LocalRuntime } from '../../../runtime/local-runtime.ts';
import { preflightRuntimes } from '../../../runtime/preflight.ts';
import type { Runtime, Sandbox, SandboxOptions } from '../../../runtime/runtime.ts';
import { Task } from '../../../task/task.ts';
import { bash } from '../../../testing/scripted-judge.ts';
import { type ScriptedClient, type ScriptedReply, scriptedClient } from '../../../testing/scripted-model-server.ts';
import type { Episode } from '../../../trace/episode.ts';
import { Env } from '../../env.ts';
import {
  createIsolatedVerifierEnv,
  isolatedVerifierEnv,
  type VerifierFailureInfo,
  type VerifierInfo,
} from './isolated-verifier-env.ts';

type Solver = (request: ModelRequest, turn: number) => ScriptedReply | string;
const MARKER = 'HIDDEN-TEST-MARKER-7f3a';

let model: ScriptedClient;
let solver: Solver;
let hidden: string;

beforeAll(async () => {
  model = await scriptedClient({
    script: (request) => solver(request, request.messages.filter((message) => message.role === 'assistant').length),
  });
  // One directory of hidden files per task: a check script that reads the solver's answer.
  hidden = mkdtempSync(join(tmpdir(), 'troupe-hidden-'));
  mkdirSync(join(hidden, 'answer-task'));
  writeFileSync(
    join(hidden, 'answer-task', 'check.sh'),
    `# ${MARKER}\ntest "$(cat answer.txt)" = 42 && echo "check passed" || { echo "check failed" >&2; exit 1; }\n`,
  );
});
afterAll(async () => {
  await model.close();
  rmSync(hidden, { recursive: true, force: true });
});

/** The local runtime's commands see the host: the verifier finds its files under the sandbox root. */
const COMMAND = 'sh "$SANDBOX_ROOT/verifier/check.sh"';

async function runEpisode(options: { task: Task; config?: Record<string, unknown>; definition?: typeof isolatedVerifierEnv }) {
  const definition = options.definition ?? isolatedVerifierEnv;
  const env = await Env.create({
    definition,
    config: {
      id: definition.id,
      solver: { harness: 'bash' },
      command: COMMAND,
      files: join(hidden, '{task}'),
      ...options.config,
    },
    run: { model: 'policy-model', client: model.client },
  });
  return env.runEpisode({ task: options.task, group: { id: 'g', index: 0 } });
}

const answerTask = () =>
  new Task({ name: 'answer-task', prompt: 'Write 6 * 7 into answer.txt.', artifacts: ['answer.txt'] }, { key: 'answer-task' });
const solverOf = (episode: Episode) => {
  const trace = episode.traces.find((each) => each.agent.name === 'solver');
  if (!trace) throw new Error('no solver trace');
  return trace;
};

describe('isolated-verifier on the local runtime', () => {
  it("scores the solver by the verifier command's exit code, with its output on the trace", async () => {
    solver = (_request, turn) => (turn === 0 ? bash('echo 42 > answer.txt; echo scratch > notes.txt') : 'Done.');
    const passed = solverOf(await runEpisode({ task: answerTask() }));
    expect(passed.rewards.verifier).toEqual({ score: 1, weight: 1 });
    const info = passed.info.verifier as VerifierInfo;
    expect(info).toMatchObject({ exitCode: 0, stdout: 'check passed\n', attempts: 1 });
    expect(info.artifacts.restored).toEqual(['answer.txt']);

    solver = (_request, turn) => (turn === 0 ? bash('echo 41 > answer.txt') : 'Done.');
    const failed = solverOf(await runEpisode({ task: answerTask() }));
    expect(failed.rewards.verifier).toEqual({ score: 0, weight: 1 });
    expect((failed.info.verifier as VerifierInfo).stderr).toBe('check failed\n');
  });

  it("keeps the hidden files out of the solver's sandbox, prompt and trace, though it searches for them", async () => {
    let prompt = '';
    solver = (request, turn) => {
      if (turn === 0) prompt = JSON.stringify(request.messages);
      return turn === 0
        ? bash(
            `M=${MARKER.slice(0, 11)}; grep -rl "$M${MARKER.slice(11)}" "$SANDBOX_ROOT" 2>/dev/null; ls -R "$SANDBOX_ROOT"; env; echo 42 > answer.txt`,
          )
        : 'Done.';
    };
    const trace = solverOf(await runEpisode({ task: answerTask() }));
    expect(trace.rewards.verifier?.score).toBe(1);
    const { verifier: _verdict, ...rest } = trace.toJSON().info as Record<string, unknown>;
    const recorded = JSON.stringify({ ...trace.toJSON(), info: rest });
    expect(recorded).toContain('answer.txt');
    expect(recorded).not.toContain(MARKER);
    expect(recorded).not.toContain('check.sh');
    expect(recorded).not.toContain(hidden);
    expect(prompt).not.toContain('verifier');
  });

  it("takes a task's own verifier settings and never hands them to the solver", async () => {
    let prompt = '';
    solver = (request, turn) => {
      if (turn === 0) prompt = JSON.stringify(request);
      return turn === 0 ? bash('echo 42 > answer.txt') : 'Done.';
    };
    const task = new Task(
      {
        name: 'own',
        prompt: 'Write 6 * 7 into answer.txt.',
        artifacts: ['answer.txt'],
        verifier: { files: join(hidden, 'answer-task'), command: `${COMMAND} && echo own` },
      },
      { key: 'own' },
    );
    const trace = solverOf(await runEpisode({ task, config: { files: join(hidden, 'missing-{task}') } }));
    expect((trace.info.verifier as VerifierInfo).stdout).toBe('check passed\nown\n');
    expect(prompt).not.toContain(hidden);
    expect(JSON.stringify(trace.toJSON())).not.toContain(hidden);
  });

  it('stages through a stageVerifier hook, and leaves the reward null (never 0) when staging keeps failing', async () => {
    solver = (_request, turn) => (turn === 0 ? bash('echo 42 > answer.txt') : 'Done.');
    const staged = createIsolatedVerifierEnv({
      stageVerifier: async ({ sandbox }) => {
        await sandbox.writeFile('/verifier/check.sh', 'echo staged by hook\n');
      },
    });
    const trace = solverOf(await runEpisode({ task: answerTask(), definition: staged }));
    expect((trace.info.verifier as VerifierInfo).stdout).toBe('staged by hook\n');

    let attempts = 0;
    const broken = createIsolatedVerifierEnv({
      stageVerifier: async ({ sandbox }) => {
        attempts++;
        await sandbox.readFile('no/such/file');
      },
    });
    const episode = await runEpisode({
      task: answerTask(),
      definition: broken,
      config: { verifierRetries: 2, verifierBackoffMs: 0 },
    });
    expect(attempts).toBe(3);
    const solution = solverOf(episode);
    expect(solution.rewards.verifier).toBeNull();
    expect(solution.info.verifierFailure).toMatchObject({ attempts: 3, runtime: 'local' } satisfies Partial<VerifierFailureInfo>);
    expect((solution.info.verifierFailure as VerifierFailureInfo).failures).toHaveLength(3);
    expect(episode.errors.map((error) => error.message).join('\n')).toMatch(/the verifier failed after 3 attempt/);
  });

  it('names a bad option', async () => {
    await expect(
      Env.create({
        definition: isolatedVerifierEnv,
        config: { id: 'isolated-verifier', solver: { harness: 'bash' }, command: COMMAND, verifierRetries: -1 },
        run: { model: 'policy-model', client: model.client },
      }),
    ).rejects.toThrow(/verifierRetries/);
  });
});

/**
 * A second runtime for the verifier: the local runtime under another id, recording each sandbox's
 * options (it runs on the host, so it drops the container-only ones before creating), and failing
 * its first `failFirst` creations as an engine would (a `SandboxError`).
 */
class RecordingRuntime implements Runtime {
  readonly capabilities = { container: false, networkIsolation: false };
  readonly specs: SandboxOptions[] = [];
  private readonly local = new LocalRuntime();
  preflighted = 0;
  constructor(
    readonly id: string,
    private failFirst = 0,
    private readonly preflightError?: string,
  ) {}
  async createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    this.specs.push(options);
    if (this.failFirst > 0) {
      this.failFirst--;
      throw new SandboxError(`${this.id}: the engine lost the sandbox`);
    }
    const { image: _image, cpu: _cpu, memoryMb: _memory, ...local } = options;
    return this.local.createSandbox(local);
  }
  async preflight(): Promise<void> {
    this.preflighted++;
    if (this.preflightError) throw new SandboxError(this.preflightError);
  }
}

describe("isolated-verifier's own runtime and retries", () => {
  let made: RecordingRuntime[] = [];
  beforeAll(() => {
    registerRuntime('verifier_box', (options) => {
      const runtime = new RecordingRuntime(
        'verifier_box',
        Number((options as { failFirst?: number }).failFirst ?? 0),
        (options as { down?: string }).down,
      );
      made.push(runtime);
      return runtime;
    });
  });
  const task = () =>
    new Task(
      { name: 'answer-task', prompt: 'Write 6 * 7 into answer.txt.', artifacts: ['answer.txt'], image: 'solver:img' },
      { key: 'answer-task' },
    );

  it("grades in a sandbox of verifier_runtime with the verifier's image, cpu and memory, recorded on the trace", async () => {
    made = [];
    solver = (_request, turn) => (turn === 0 ? bash('echo 42 > answer.txt') : 'Done.');
    const trace = solverOf(
      await runEpisode({
        task: task(),
        config: { verifierRuntime: { id: 'verifier_box' }, image: 'verifier:img', cpu: 2, memoryMb: 4096 },
      }),
    );
    expect(trace.rewards.verifier).toEqual({ score: 1, weight: 1 });
    expect(made).toHaveLength(1);
    expect(made[0]?.specs).toEqual([{ image: 'verifier:img', cpu: 2, memoryMb: 4096 }]);
    expect(trace.info.verifier).toMatchObject({ runtime: 'verifier_box', attempts: 1, failures: [] });
  });

  it('retries an infrastructure failure in a fresh sandbox and records each failed attempt', async () => {
    made = [];
    solver = (_request, turn) => (turn === 0 ? bash('echo 42 > answer.txt') : 'Done.');
    const trace = solverOf(
      await runEpisode({
        task: task(),
        config: { verifierRuntime: { id: 'verifier_box', failFirst: 2 }, verifierRetries: 2, verifierBackoffMs: 0 },
      }),
    );
    expect(trace.rewards.verifier?.score).toBe(1);
    const info = trace.info.verifier as VerifierInfo;
    expect(info.attempts).toBe(3);
    expect(info.failures).toEqual(['verifier_box: the engine lost the sandbox', 'verifier_box: the engine lost the sandbox']);
  });

  it('never retries a failing verdict', async () => {
    made = [];
    solver = (_request, turn) => (turn === 0 ? bash('echo 41 > answer.txt') : 'Done.');
    const trace = solverOf(
      await runEpisode({ task: task(), config: { verifierRuntime: 'verifier_box', verifierRetries: 3, verifierBackoffMs: 0 } }),
    );
    expect(trace.rewards.verifier).toEqual({ score: 0, weight: 1 });
    expect(made[0]?.specs).toHaveLength(1);
    expect(trace.info.verifier).toMatchObject({ attempts: 1, failures: [], exitCode: 1 });
  });

  it('leaves the reward null once the retries are spent', async () => {
    solver = (_request, turn) => (turn === 0 ? bash('echo 42 > answer.txt') : 'Done.');
    const episode = await runEpisode({
      task: task(),
      config: { verifierRuntime: { id: 'verifier_box', failFirst: 5 }, verifierRetries: 1, verifierBackoffMs: 0 },
    });
    const trace = solverOf(episode);
    expect(trace.rewards.verifier).toBeNull();
    expect(trace.info.verifierFailure).toMatchObject({ attempts: 2, runtime: 'verifier_box' });
  });

  it('checks the verifier runtime in the preflight, naming env.verifierRuntime', async () => {
    const env = await Env.create({
      definition: isolatedVerifierEnv,
      config: {
        id: 'isolated-verifier',
        solver: { harness: 'bash' },
        command: COMMAND,
        verifierRuntime: { id: 'verifier_box', down: 'verifier_box: the engine does not answer' },
      },
      run: { model: 'policy-model', client: model.client },
    });
    await expect(preflightRuntimes([env])).rejects.toThrow(
      /env isolated-verifier, env\.verifierRuntime: runtime verifier_box failed its preflight: verifier_box: the engine does not answer/,
    );
  });

  it('names a verifier runtime that does not exist, and bad resources', async () => {
    const create = (extra: Record<string, unknown>) =>
      Env.create({
        definition: isolatedVerifierEnv,
        config: { id: 'isolated-verifier', solver: { harness: 'bash' }, command: COMMAND, ...extra },
        run: { model: 'policy-model', client: model.client },
      });
    await expect(create({ verifierRuntime: 'no_such_box' })).rejects.toThrow(/env\.verifierRuntime: runtime "no_such_box"/);
    await expect(create({ memoryMb: -1 })).rejects.toThrow(/memoryMb/);
    await expect(create({ verifierRuntime: 7 })).rejects.toThrow(/verifierRuntime/);
  });
});
