import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { singleAgentEnv } from '../../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../../src/env/env.ts';
import { runEval } from '../../../src/eval/eval-runner.ts';
import { OpenAICompatibleClient } from '../../../src/model/openai-client.ts';
import { FAULT_KINDS, type FaultKind } from '../../../src/testing/fault-injection.ts';
import { ScriptedModelServer, type ScriptedReply } from '../../../src/testing/scripted-model-server.ts';
import { answerOf, reliabilityTaskset, taskIndexOf } from './arithmetic-script.ts';
import { registerReliabilityPlugins } from './register-plugins.ts';

/** Every `POISON_EVERY`-th task always fails at the model server, so the retry budget is spent. */
export const POISON_EVERY = 25;
/** What a poisoned task's model server answers, cycling by task. */
const POISONS: ScriptedReply[] = [
  { error: { status: 500, message: 'poisoned: internal error' } },
  { error: { status: 429, message: 'poisoned: rate limited', headers: { 'retry-after-ms': '5' } } },
  { fault: 'reset' },
  { fault: 'malformed' },
];

export interface FaultEvalOptions {
  episodes: number;
  /** Seed of the random fault plan. */
  seed: number;
  /** Fraction of requests with a random fault (default 0.2). */
  rate?: number;
  /** Retries after the first attempt (the configured budget). */
  maxRetries?: number;
  /** `fetch-program` drives each rollout over HTTP through the interception server; `null` calls it in process. */
  harness: 'null' | 'fetch-program';
  concurrency?: number;
}

/** What one fault eval produced, for assertions and the report. */
export interface FaultEvalResult {
  outDir: string;
  episodes: number;
  /** Episodes in traces.jsonl (lines) and distinct `task#index` keys among them. */
  lines: number;
  distinctKeys: number;
  ok: number;
  failed: number;
  /** Failed episodes by `type` (and HTTP status) of their first trace error. */
  errorsByType: Record<string, number>;
  /** Faults the server injected, by kind (random and poisoned). */
  faultsByKind: Record<string, number>;
  /** Requests that reached the model server, and the most any one task needed. */
  requests: number;
  maxRequestsPerTask: number;
  maxRetries: number;
  poisonedTasks: number[];
  /** Failed tasks whose error does not say the retry budget was spent. */
  unexplainedFailures: number[];
  /** Ok episodes whose reward is not 1. */
  wrongRewards: number;
  /** Failed episodes whose error is not a ProviderError. */
  nonProviderErrors: string[];
  wallSeconds: number;
}

/**
 * Runs an eval of `episodes` single-agent episodes against the scripted model server injecting
 * `rate` random faults of every kind (5xx, 429 with retry-after, resets, timeouts, truncated and
 * malformed bodies, cut streams), plus poisoned tasks that always fail.
 */
export async function runFaultEval(options: FaultEvalOptions): Promise<FaultEvalResult> {
  registerReliabilityPlugins();
  const maxRetries = options.maxRetries ?? 3;
  const poisonedTasks: number[] = [];
  for (let i = POISON_EVERY - 1; i < options.episodes; i += POISON_EVERY) poisonedTasks.push(i);
  const server = await ScriptedModelServer.start({
    latencyMs: 2,
    faults: { rate: options.rate ?? 0.2, seed: options.seed, kinds: [...FAULT_KINDS], retryAfterMs: 5 },
    script: (request) => {
      const index = taskIndexOf(request);
      if (index !== null && (index + 1) % POISON_EVERY === 0) {
        return POISONS[((index + 1) / POISON_EVERY - 1) % POISONS.length] as ScriptedReply;
      }
      return answerOf(request);
    },
  });
  const outDir = mkdtempSync(join(tmpdir(), 'troupe-faults-'));
  const started = Date.now();
  try {
    const client = new OpenAICompatibleClient({
      baseUrl: server.baseUrl,
      apiKey: 'sk-scripted',
      model: 'scripted-model',
      retry: { maxRetries, baseDelayMs: 2, maxDelayMs: 20 },
      // Injected timeouts never answer: one attempt gives up after this (generous: CI machines are slow).
      timeoutMs: 3000,
    });
    const { InterceptionServer } = await import('../../../src/interception/interception-server.ts');
    let interception: InstanceType<typeof InterceptionServer> | undefined;
    let interceptionStarted: Promise<InstanceType<typeof InterceptionServer>> | undefined;
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: options.harness, runtime: 'memory' } },
      run: { model: 'scripted-model', client },
      interception: () =>
        (interceptionStarted ??= (async () => {
          interception = new InterceptionServer();
          await interception.start();
          return interception;
        })()),
    });
    try {
      await runEval({
        env,
        taskset: reliabilityTaskset(options.episodes),
        outDir,
        model: 'scripted-model',
        concurrency: options.concurrency ?? 32,
      });
    } finally {
      await interception?.close();
    }
  } finally {
    await server.close();
  }
  const lines = readFileSync(join(outDir, 'traces.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim());
  const episodes = lines.map(
    (line) =>
      JSON.parse(line) as {
        ok: boolean;
        task: { key: string };
        group: { index: number };
        errors: { type: string; message: string }[];
        traces: {
          ok: boolean;
          rewards: Record<string, { score: number } | null>;
          errors: { type: string; message: string; statusCode?: number }[];
        }[];
      },
  );
  const requestsPerTask = new Map<number, { total: number; faulted: number }>();
  const faultsByKind: Record<string, number> = {};
  for (const entry of server.requests) {
    if (entry.fault) faultsByKind[entry.fault] = (faultsByKind[entry.fault] ?? 0) + 1;
    else if (entry.status >= 400) faultsByKind[`http_${entry.status}`] = (faultsByKind[`http_${entry.status}`] ?? 0) + 1;
    const index = entry.request ? taskIndexOf(entry.request) : null;
    if (index === null) continue;
    const counts = requestsPerTask.get(index) ?? { total: 0, faulted: 0 };
    counts.total++;
    if (entry.fault || entry.status >= 400) counts.faulted++;
    requestsPerTask.set(index, counts);
  }
  const errorsByType: Record<string, number> = {};
  const unexplainedFailures: number[] = [];
  const nonProviderErrors: string[] = [];
  let wrongRewards = 0;
  for (const episode of episodes) {
    const index = Number(episode.task.key.replace('reliability-', ''));
    if (episode.ok) {
      if (episode.traces[0]?.rewards.correct?.score !== 1) wrongRewards++;
      continue;
    }
    const error = episode.traces[0]?.errors[0] ?? episode.errors[0];
    const label = error ? `${error.type}${'statusCode' in error && error.statusCode ? ` ${error.statusCode}` : ''}` : 'none';
    errorsByType[label] = (errorsByType[label] ?? 0) + 1;
    if (error?.type !== 'ProviderError') nonProviderErrors.push(`${episode.task.key}: ${JSON.stringify(error)}`);
    // A failure must have spent the whole budget: every attempt failed (an injected fault, or a
    // client-side timeout on a loaded machine) and the error says so.
    const exhausted = error?.message.includes(`(after ${maxRetries + 1} attempts)`) ?? false;
    if (!exhausted) unexplainedFailures.push(index);
  }
  return {
    outDir,
    episodes: options.episodes,
    lines: lines.length,
    distinctKeys: new Set(episodes.map((e) => `${e.task.key}#${e.group.index}`)).size,
    ok: episodes.filter((e) => e.ok).length,
    failed: episodes.filter((e) => !e.ok).length,
    errorsByType,
    faultsByKind,
    requests: server.requests.length,
    maxRequestsPerTask: Math.max(0, ...[...requestsPerTask.values()].map((c) => c.total)),
    maxRetries,
    poisonedTasks,
    unexplainedFailures,
    wrongRewards,
    nonProviderErrors,
    wallSeconds: (Date.now() - started) / 1000,
  };
}

/** The fault kinds a run is expected to have injected at least once (given enough requests). */
export const EXPECTED_FAULT_KINDS: FaultKind[] = [...FAULT_KINDS];
