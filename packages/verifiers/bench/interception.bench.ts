/**
 * bench:interception — the latency the interception server adds to one model call.
 *
 * The same sequential calls go, interleaved one by one, (a) from the `openai` SDK straight to the
 * scripted model server and (b) from the SDK through InterceptionServer → RolloutSession →
 * OpenAICompatibleClient → the same scripted server. Overhead = quantile(b) − quantile(a).
 * A new rollout session is registered every 25 calls, as rollouts would.
 *
 * Then `programs` concurrent programs (default 50), each making sequential chat calls through its
 * own rollout sessions (a new one every 25 calls), in alternating phases: all direct, then all
 * through interception (order alternating by round); p50/p99 per path and CPU time per call.
 *
 * Then the deployment shape: the same programs in their own process and the scripted model in
 * another, so this process runs only the interception server (see measureOutOfProcess), for each
 * `MODEL_MS:THINK_MS` shape (default `0:0,50:50`): the model answering at once with programs calling
 * back to back (saturation: the programs run in lockstep), and a model answering after 50 ms with
 * programs working 0–100 ms between calls.
 *
 * Usage: tsx packages/verifiers/bench/interception.bench.ts [calls=2000] [streamCalls=500] [programs=50] [shapes=0:0,50:50]
 * The last stdout line is one JSON object.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { InterceptionServer } from '../src/interception/interception-server.ts';
import { RolloutSession } from '../src/interception/rollout-session.ts';
import { OpenAICompatibleClient } from '../src/model/openai-client.ts';
import { ScriptedModelServer } from '../src/testing/scripted-model-server.ts';
import { Trace } from '../src/trace/trace.ts';
import { startModelProcess } from './support/model-process.ts';

const calls = Number(process.argv[2] ?? 2000);
const streamCalls = Number(process.argv[3] ?? 500);
const programCount = Number(process.argv[4] ?? 50);
/**
 * Shapes of the out-of-process phase, comma-separated `MODEL_MS:THINK_MS` (default `0:0,50:50`):
 * the model's reply latency and the programs' mean work between calls.
 */
const outOfProcessShapes = (process.argv[5] ?? '0:0,50:50')
  .split(',')
  .filter(Boolean)
  .map((shape) => shape.split(':').map(Number) as [number, number]);
const warmup = 200;
const SESSION_CALLS = 25;

const model = await ScriptedModelServer.start({
  script: (_request, { callIndex }) => ({
    content: `Reply number ${callIndex}: the answer is ${callIndex % 97}. I checked it twice.`,
    usage: { promptTokens: 60, completionTokens: 16 },
  }),
  keepLog: false,
});
const interception = new InterceptionServer();
await interception.start();
const client = new OpenAICompatibleClient({ baseUrl: model.baseUrl, apiKey: 'sk-bench', model: 'policy' });

let session: RolloutSession | null = null;
let sessionCalls = 0;
function currentSecret(): string {
  if (!session || sessionCalls >= SESSION_CALLS) {
    if (session) interception.unregister(session);
    const trace = new Trace({ task: { key: 'bench', hash: 'h', data: {} }, agent: { name: 'bench', trainable: true } });
    session = new RolloutSession({ trace, client, model: 'policy' });
    interception.register(session);
    sessionCalls = 0;
  }
  sessionCalls++;
  return session.secret;
}

const system = 'You are a careful assistant. Answer the arithmetic question and explain briefly. '.repeat(8);
const messagesFor = (i: number): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'system', content: system },
  { role: 'user', content: `Question ${i}: what is ${i} + ${i % 13}?` },
];

const direct = new OpenAI({ baseURL: model.baseUrl, apiKey: 'sk-bench', maxRetries: 0 });
const directAnthropic = new Anthropic({ baseURL: model.url, apiKey: 'sk-bench', maxRetries: 0 });
// One program client per rollout, as a program would hold one.
const programs = new Map<string, { openai: OpenAI; anthropic: Anthropic }>();
function programFor(secret: string) {
  let program = programs.get(secret);
  if (!program) {
    programs.clear();
    program = {
      openai: new OpenAI({ baseURL: `${interception.url}/v1`, apiKey: secret, maxRetries: 0 }),
      anthropic: new Anthropic({ baseURL: interception.url, apiKey: secret, maxRetries: 0 }),
    };
    programs.set(secret, program);
  }
  return program;
}
const viaInterception = (secret: string) => programFor(secret).openai;
const viaInterceptionAnthropic = (secret: string) => programFor(secret).anthropic;

type Kind = 'chat' | 'chat-stream' | 'messages-stream';

/** CPU time (user + system, ms) spent by this process during each call: the load-independent cost. */
const cpu = { direct: [] as number[], intercepted: [] as number[] };

async function call(kind: Kind, i: number, intercepted: boolean): Promise<number> {
  const cpuStart = process.cpuUsage();
  const elapsed = await timedCall(kind, i, intercepted);
  const used = process.cpuUsage(cpuStart);
  (intercepted ? cpu.intercepted : cpu.direct).push((used.user + used.system) / 1000);
  return elapsed;
}

async function timedCall(kind: Kind, i: number, intercepted: boolean): Promise<number> {
  const started = performance.now();
  if (kind === 'chat') {
    const sdk = intercepted ? viaInterception(currentSecret()) : direct;
    const reply = await sdk.chat.completions.create({ model: 'm', messages: messagesFor(i) });
    if (!reply.choices[0]?.message.content) throw new Error('empty reply');
  } else if (kind === 'chat-stream') {
    const sdk = intercepted ? viaInterception(currentSecret()) : direct;
    const stream = await sdk.chat.completions.create({ model: 'm', messages: messagesFor(i), stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    if (!text) throw new Error('empty stream');
  } else {
    const sdk = intercepted ? viaInterceptionAnthropic(currentSecret()) : directAnthropic;
    const stream = await sdk.messages.create({
      model: 'm',
      max_tokens: 256,
      stream: true,
      system,
      messages: [{ role: 'user', content: `Question ${i}: what is ${i} + ${i % 13}?` }],
    });
    let text = '';
    for await (const event of stream)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    if (!text) throw new Error('empty stream');
  }
  return performance.now() - started;
}

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] as number;
}

interface Measured {
  kind: Kind;
  direct: { p50: number; p99: number };
  intercepted: { p50: number; p99: number };
  overheadP50: number;
  overheadP99: number;
  cpuOverheadP50: number;
}

async function measure(kind: Kind, n: number): Promise<Measured> {
  for (let i = 0; i < Math.min(warmup, n); i++) {
    await call(kind, i, false);
    await call(kind, i, true);
  }
  cpu.direct.length = 0;
  cpu.intercepted.length = 0;
  const directTimes: number[] = [];
  const interceptedTimes: number[] = [];
  for (let i = 0; i < n; i++) {
    // Interleaved, alternating which goes first, so machine load hits both sides alike.
    if (i % 2 === 0) {
      directTimes.push(await call(kind, i, false));
      interceptedTimes.push(await call(kind, i, true));
    } else {
      interceptedTimes.push(await call(kind, i, true));
      directTimes.push(await call(kind, i, false));
    }
  }
  directTimes.sort((a, b) => a - b);
  interceptedTimes.sort((a, b) => a - b);
  const d = { p50: quantile(directTimes, 0.5), p99: quantile(directTimes, 0.99) };
  const t = { p50: quantile(interceptedTimes, 0.5), p99: quantile(interceptedTimes, 0.99) };
  const cpuDirect = cpu.direct.sort((a, b) => a - b);
  const cpuIntercepted = cpu.intercepted.sort((a, b) => a - b);
  const cpuOverheadP50 = quantile(cpuIntercepted, 0.5) - quantile(cpuDirect, 0.5);
  const result = { kind, direct: d, intercepted: t, overheadP50: t.p50 - d.p50, overheadP99: t.p99 - d.p99, cpuOverheadP50 };
  const f = (x: number) => x.toFixed(3).padStart(8);
  console.log(
    `${kind.padEnd(16)} n=${n}  direct p50 ${f(d.p50)} ms  p99 ${f(d.p99)} ms | intercepted p50 ${f(t.p50)} ms  p99 ${f(t.p99)} ms | overhead p50 ${f(result.overheadP50)} ms  p99 ${f(result.overheadP99)} ms | cpu/call p50 direct ${f(quantile(cpuDirect, 0.5))} ms intercepted ${f(quantile(cpuIntercepted, 0.5))} ms`,
  );
  return result;
}

/**
 * `count` programs at once, each making sequential chat calls, each program through its own
 * rollout sessions (a new one every 25 calls). Phases alternate: all programs direct, then all
 * through interception (which goes first alternates by round), so each phase measures one path
 * at that concurrency and a change of machine load hits both; CPU time is taken per phase.
 */
async function measureConcurrent(count: number, perProgram: number, rounds = 4) {
  const owned = new Map<number, { session: RolloutSession; sdk: OpenAI; calls: number }>();
  const sdkFor = (program: number) => {
    let own = owned.get(program);
    if (!own || own.calls >= SESSION_CALLS) {
      if (own) interception.unregister(own.session);
      const trace = new Trace({ task: { key: 'bench', hash: 'h', data: {} }, agent: { name: 'bench', trainable: true } });
      const session = new RolloutSession({ trace, client, model: 'policy' });
      interception.register(session);
      own = { session, sdk: new OpenAI({ baseURL: `${interception.url}/v1`, apiKey: session.secret, maxRetries: 0 }), calls: 0 };
      owned.set(program, own);
    }
    own.calls++;
    return own.sdk;
  };
  const times = { direct: [] as number[], intercepted: [] as number[] };
  const cpuMs = { direct: 0, intercepted: 0 };
  const phase = async (intercepted: boolean, calls: number, keep: boolean) => {
    const cpuStart = process.cpuUsage();
    await Promise.all(
      Array.from({ length: count }, async (_, program) => {
        for (let i = 0; i < calls; i++) {
          const sdk = intercepted ? sdkFor(program) : direct;
          const started = performance.now();
          const reply = await sdk.chat.completions.create({ model: 'm', messages: messagesFor(program * 10_000 + i) });
          if (!reply.choices[0]?.message.content) throw new Error('empty reply');
          if (keep) (intercepted ? times.intercepted : times.direct).push(performance.now() - started);
        }
      }),
    );
    const used = process.cpuUsage(cpuStart);
    if (keep) cpuMs[intercepted ? 'intercepted' : 'direct'] += (used.user + used.system) / 1000;
  };
  await alternatePhases(phase, perProgram, rounds);
  for (const own of owned.values()) interception.unregister(own.session);
  const d = sorted(times.direct);
  const t = sorted(times.intercepted);
  const direct_ = { p50: quantile(d, 0.5), p99: quantile(d, 0.99) };
  const inter = { p50: quantile(t, 0.5), p99: quantile(t, 0.99) };
  const cpuOverheadPerCall = cpuMs.intercepted / t.length - cpuMs.direct / d.length;
  const f = (x: number) => x.toFixed(3).padStart(8);
  console.log(
    `chat ×${String(count).padEnd(11)} n=${d.length}  direct p50 ${f(direct_.p50)} ms  p99 ${f(direct_.p99)} ms | intercepted p50 ${f(inter.p50)} ms  p99 ${f(inter.p99)} ms | overhead p50 ${f(inter.p50 - direct_.p50)} ms  p99 ${f(inter.p99 - direct_.p99)} ms | cpu/call direct ${f(cpuMs.direct / d.length)} ms intercepted ${f(cpuMs.intercepted / t.length)} ms`,
  );
  return {
    programs: count,
    calls: d.length,
    direct: direct_,
    intercepted: inter,
    overheadP50: inter.p50 - direct_.p50,
    overheadP99: inter.p99 - direct_.p99,
    cpuOverheadPerCall,
  };
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

/**
 * A warm-up of 4 calls per program on each path off the clock, then `rounds` rounds of the two
 * paths, which goes first alternating by round, `perProgram` calls per program in all.
 */
async function alternatePhases(
  phase: (intercepted: boolean, calls: number, keep: boolean) => Promise<void>,
  perProgram: number,
  rounds: number,
): Promise<void> {
  await phase(false, 4, false);
  await phase(true, 4, false);
  const perRound = Math.max(1, Math.round(perProgram / rounds));
  for (let round = 0; round < rounds; round++) {
    await phase(round % 2 === 1, perRound, true);
    await phase(round % 2 === 0, perRound, true);
  }
}

/**
 * The deployment shape: `count` programs in their own process (interception-programs-process.ts)
 * and the scripted model in another (answering after `latencyMs`, as a model takes time to
 * reply), so this process runs only the interception server, as troupe's does. Phases alternate
 * as in {@link measureConcurrent}: all programs straight to the model, then all through
 * interception (a new rollout session every 25 calls). Latency is what the programs saw; CPU is
 * this process's (the interception server's) per intercepted call.
 */
async function measureOutOfProcess(count: number, perProgram: number, latencyMs: number, thinkMs: number, rounds = 4) {
  const modelProcess = await startModelProcess(latencyMs);
  const modelBaseUrl = `${modelProcess.url}/v1`;
  const upstream = new OpenAICompatibleClient({ baseUrl: modelBaseUrl, apiKey: 'sk-bench', model: 'policy' });
  const programsProcess = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'support/interception-programs-process.ts')],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const replies = new Map<number, (reply: { times?: number[]; error?: string }) => void>();
  createInterface({ input: programsProcess.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const reply = JSON.parse(line) as { phase: number; times?: number[]; error?: string };
    replies.get(reply.phase)?.(reply);
  });
  let nextPhase = 0;
  const times = { direct: [] as number[], intercepted: [] as number[] };
  let interceptionCpuMs = 0;
  const phase = async (intercepted: boolean, calls: number, keep: boolean) => {
    const sessions: RolloutSession[] = [];
    const keys = Array.from({ length: count }, () => {
      if (!intercepted) return ['sk-bench'];
      return Array.from({ length: Math.ceil(calls / SESSION_CALLS) }, () => {
        const trace = new Trace({ task: { key: 'bench', hash: 'h', data: {} }, agent: { name: 'bench', trainable: true } });
        const session = new RolloutSession({ trace, client: upstream, model: 'policy' });
        interception.register(session);
        sessions.push(session);
        return session.secret;
      });
    });
    const id = nextPhase++;
    const cpuStart = process.cpuUsage();
    const reply = await new Promise<{ times?: number[]; error?: string }>((resolve) => {
      replies.set(id, resolve);
      const baseUrl = intercepted ? `${interception.url}/v1` : modelBaseUrl;
      programsProcess.stdin?.write(
        `${JSON.stringify({ phase: id, baseUrl, keys, calls, sessionCalls: SESSION_CALLS, thinkMs })}\n`,
      );
    });
    const used = process.cpuUsage(cpuStart);
    replies.delete(id);
    for (const session of sessions) interception.unregister(session);
    if (reply.error !== undefined || reply.times === undefined) throw new Error(`programs process: ${reply.error}`);
    if (!keep) return;
    (intercepted ? times.intercepted : times.direct).push(...reply.times);
    if (intercepted) interceptionCpuMs += (used.user + used.system) / 1000;
  };
  try {
    await alternatePhases(phase, perProgram, rounds);
  } finally {
    programsProcess.stdin?.end();
    modelProcess.child.stdin?.end();
  }
  const d = sorted(times.direct);
  const t = sorted(times.intercepted);
  const direct_ = { p50: quantile(d, 0.5), p99: quantile(d, 0.99) };
  const inter = { p50: quantile(t, 0.5), p99: quantile(t, 0.99) };
  const cpuPerCall = interceptionCpuMs / t.length;
  const f = (x: number) => x.toFixed(3).padStart(8);
  console.log(
    `chat ×${count} out of process, model ${latencyMs} ms, think ${thinkMs} ms`.padEnd(50) +
      ` n=${d.length}  direct p50 ${f(direct_.p50)} ms  p99 ${f(direct_.p99)} ms | intercepted p50 ${f(inter.p50)} ms  p99 ${f(inter.p99)} ms | overhead p50 ${f(inter.p50 - direct_.p50)} ms  p99 ${f(inter.p99 - direct_.p99)} ms | interception cpu/call ${f(cpuPerCall)} ms`,
  );
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    programs: count,
    model_latency_ms: latencyMs,
    think_ms: thinkMs,
    calls: d.length,
    overhead_p50_ms: round(inter.p50 - direct_.p50),
    overhead_p99_ms: round(inter.p99 - direct_.p99),
    direct_p50_ms: round(direct_.p50),
    direct_p99_ms: round(direct_.p99),
    intercepted_p50_ms: round(inter.p50),
    intercepted_p99_ms: round(inter.p99),
    interception_cpu_per_call_ms: round(cpuPerCall),
  };
}

/** 1-min load average when the bench started (the JSON line reports start and end). */
const loadStart = loadavg()[0]!;
try {
  const chat = await measure('chat', calls);
  const chatStream = streamCalls > 0 ? await measure('chat-stream', streamCalls) : null;
  const messagesStream = streamCalls > 0 ? await measure('messages-stream', streamCalls) : null;
  const concurrent =
    programCount > 0 ? await measureConcurrent(programCount, Math.max(2, Math.round(calls / programCount))) : null;
  const outOfProcess = [];
  if (programCount > 0)
    for (const [latencyMs, thinkMs] of outOfProcessShapes)
      outOfProcess.push(
        await measureOutOfProcess(programCount, Math.max(2, Math.round(calls / programCount)), latencyMs, thinkMs),
      );
  const round = (x: number) => Math.round(x * 1000) / 1000;
  console.log(
    JSON.stringify({
      name: 'interception_overhead_p50',
      value: round(chat.overheadP50),
      unit: 'ms',
      baseline: round(chat.direct.p50),
      ratio: round(chat.intercepted.p50 / chat.direct.p50),
      overhead_p50_ms: round(chat.overheadP50),
      overhead_p99_ms: round(chat.overheadP99),
      direct_p50_ms: round(chat.direct.p50),
      direct_p99_ms: round(chat.direct.p99),
      intercepted_p50_ms: round(chat.intercepted.p50),
      intercepted_p99_ms: round(chat.intercepted.p99),
      calls,
      cpu_overhead_p50_ms: round(chat.cpuOverheadP50),
      chat_stream_overhead_p50_ms: chatStream ? round(chatStream.overheadP50) : null,
      messages_stream_overhead_p50_ms: messagesStream ? round(messagesStream.overheadP50) : null,
      concurrent: concurrent
        ? {
            programs: concurrent.programs,
            calls: concurrent.calls,
            overhead_p50_ms: round(concurrent.overheadP50),
            overhead_p99_ms: round(concurrent.overheadP99),
            direct_p50_ms: round(concurrent.direct.p50),
            direct_p99_ms: round(concurrent.direct.p99),
            intercepted_p50_ms: round(concurrent.intercepted.p50),
            intercepted_p99_ms: round(concurrent.intercepted.p99),
            cpu_overhead_per_call_ms: round(concurrent.cpuOverheadPerCall),
          }
        : null,
      out_of_process: outOfProcess,
      goal_p50_ms: 1,
      load: { start: round(loadStart), end: round(loadavg()[0]!) },
    }),
  );
} finally {
  await interception.close();
  await model.close();
}
