import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerHarness, registerRuntime } from '../../../src/agent/plugins.ts';
import { singleAgentEnv } from '../../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../../src/env/env.ts';
import { runEval } from '../../../src/eval/eval-runner.ts';
import { readEpisodes } from '../../../src/eval/traces-file.ts';
import type { Harness, HarnessCapabilities, HarnessLaunchContext, HarnessResult } from '../../../src/harness/harness.ts';
import { InterceptionServer, type InterceptionServerOptions } from '../../../src/interception/interception-server.ts';
import { contentText } from '../../../src/model/messages.ts';
import type { ModelClient, ModelRequest, ModelResponse } from '../../../src/model/model-client.ts';
import { answerOf, reliabilityTaskset } from './arithmetic-script.ts';
import { MemoryRuntime } from './memory-runtime.ts';

/** What each hostile program does: `calls` distinct chat calls of `bytes` each, `concurrency` at once. */
export interface HostileProgramShape {
  calls: number;
  bytes: number;
  concurrency: number;
}

/** Options of {@link runHostileEval}. */
export interface HostileEvalOptions extends HostileProgramShape {
  /** Episodes whose program is hostile (tasks 0 … hostile-1). */
  hostile: number;
  /** Well-behaved episodes besides them (one call with the task's prompt). */
  benign: number;
  /** Per-rollout byte budget (`agent.maxTraceBytes`); unset = the default. */
  maxTraceBytes?: number;
  /** Options of the interception server (its process-wide body budget). */
  interception?: InterceptionServerOptions;
  /** The agent's turn limit (`agent.maxTurns`). */
  maxTurns?: number;
  /** Keep the run directory (default: removed once read back). */
  keepOutDir?: boolean;
}

/** One episode of the run as `traces.jsonl` holds it. */
export interface HostileEpisodeOutcome {
  key: string;
  hostile: boolean;
  ok: boolean;
  stopCondition: string | null;
  calls: number;
  errors: string[];
}

/** What a hostile eval produced. */
export interface HostileEvalResult {
  outDir: string;
  /** Whether `runEval` finished (false: it threw, with `crash` the message). */
  finished: boolean;
  crash?: string;
  episodes: HostileEpisodeOutcome[];
  /** Episodes that should be there but are not in `traces.jsonl`. */
  missing: string[];
  /** The interception server's body budget at the end (capacity, peak). */
  bodyBudget: { capacity: number; peak: number } | null;
  /** The calls that reached the model. */
  modelCalls: number;
  /** This process's peak resident set in MiB (for one run per process; the figure of the closing note). */
  peakRssMiB: number;
  wallSeconds: number;
}

const PROGRAM = join(import.meta.dirname, 'hostile-program.mjs');

/**
 * A harness that runs `hostile-program.mjs` as its own process (a real program's memory is its
 * own): for tasks below `hostile` it makes the hostile calls, for the rest one call with the prompt.
 */
class HostileProgramHarness implements Harness {
  readonly id = 'hostile-program';
  readonly inProcess = false;
  readonly capabilities: HarnessCapabilities = {
    executesCode: false,
    needsContainer: false,
    supportsMcp: false,
    supportsResume: false,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  constructor(private readonly options: HostileEvalOptions) {}

  launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const index = Number(context.task.key.replace('reliability-', ''));
    const hostile = index < this.options.hostile;
    const prompt = contentText(context.messages.findLast((m) => m.role === 'user')?.content ?? '');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      BASE_URL: context.endpoint.baseUrl,
      KEY: context.endpoint.secret,
      ...(hostile
        ? { CALLS: String(this.options.calls), BYTES: String(this.options.bytes), CONCURRENCY: String(this.options.concurrency) }
        : { CALLS: '1', PROMPT: prompt }),
    };
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [PROGRAM], { env, stdio: ['ignore', 'pipe', 'pipe'], signal: context.signal });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
      child.on('error', (error) => resolve({ exitCode: 1, stdout, stderr: `${stderr}${error.message}` }));
      child.on('close', (code) => resolve({ exitCode: code ?? 1, stdout, stderr }));
    });
  }
}

/** A model that answers at once in process (no second copy of each body on an HTTP hop). */
class AnsweringModel implements ModelClient {
  readonly model = 'answering-model';
  calls = 0;
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    await new Promise((resolve) => setTimeout(resolve, 5));
    return {
      id: `answer-${this.calls}`,
      model: this.model,
      message: { role: 'assistant', content: answerOf(request) },
      finishReason: 'stop',
      usage: { promptTokens: 1, completionTokens: 1 },
    };
  }
}

/**
 * Runs an eval of `hostile` hostile and `benign` well-behaved single-agent episodes, each program
 * its own process calling through one interception server, and reads back what `traces.jsonl`
 * holds: which episodes were kept, which failed and why.
 */
export async function runHostileEval(options: HostileEvalOptions): Promise<HostileEvalResult> {
  registerHarness('hostile_program', () => new HostileProgramHarness(options));
  registerRuntime('memory', () => new MemoryRuntime());
  const model = new AnsweringModel();
  const outDir = mkdtempSync(join(tmpdir(), 'troupe-hostile-'));
  const total = options.hostile + options.benign;
  const started = Date.now();
  let interception: InterceptionServer | undefined;
  let interceptionStarted: Promise<InterceptionServer> | undefined;
  let finished = true;
  let crash: string | undefined;
  const env = await Env.create({
    definition: singleAgentEnv,
    config: {
      id: 'single-agent',
      agent: {
        harness: 'hostile_program',
        runtime: 'memory',
        ...(options.maxTraceBytes !== undefined ? { maxTraceBytes: options.maxTraceBytes } : {}),
        ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
      },
    },
    run: { model: model.model, client: model },
    interception: () =>
      (interceptionStarted ??= (async () => {
        interception = new InterceptionServer(options.interception);
        await interception.start();
        return interception;
      })()),
  });
  try {
    await runEval({ env, taskset: reliabilityTaskset(total), outDir, model: model.model, concurrency: total });
  } catch (error) {
    finished = false;
    crash = (error as Error).message.slice(0, 300);
  } finally {
    await interception?.close();
  }
  const { episodes } = readEpisodes(join(outDir, 'traces.jsonl'));
  const outcomes = episodes.map((episode) => {
    const trace = episode.traces[0];
    const index = Number(episode.task.key.replace('reliability-', ''));
    return {
      key: episode.task.key,
      hostile: index < options.hostile,
      ok: episode.ok,
      stopCondition: trace?.stopCondition ?? null,
      calls: trace?.calls.length ?? 0,
      errors: [...episode.errors, ...(trace?.errors ?? [])].map((e) => `${e.type}: ${e.message.slice(0, 160)}`),
    };
  });
  if (!options.keepOutDir) rmSync(outDir, { recursive: true, force: true });
  const seen = new Set(outcomes.map((o) => o.key));
  const budget = (interception as { bodyBudget?: { capacity: number; peak: number } } | undefined)?.bodyBudget;
  return {
    outDir,
    finished,
    ...(crash !== undefined ? { crash } : {}),
    episodes: outcomes,
    missing: Array.from({ length: total }, (_, i) => `reliability-${i}`).filter((key) => !seen.has(key)),
    bodyBudget: budget ? { capacity: budget.capacity, peak: budget.peak } : null,
    modelCalls: model.calls,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    wallSeconds: (Date.now() - started) / 1000,
  };
}
