/**
 * `pnpm bench:fleet`: one orchestrator process feeding a fleet of vLLM servers.
 *
 * N vLLM-shaped servers (`support/vllm-fleet.ts`: pre-encoded replies with token ids and per-token
 * logprobs, log-normal completion lengths, a fixed latency plus decode time at `--tokens-per-second`
 * per server) run in a child process that reports its own CPU. This process keeps K rollouts of a
 * multi-turn env (`support/fleet-env.ts`) in flight through the real path: `Env` and its `null`
 * harness seat, the rollout session's interception and trace recording, `InferencePool` (token
 * ids, logprobs, `cache_salt`, least-outstanding routing), `GroupScorer` (GRPO), `BatchBuilder`
 * (a step every `--step-tokens` tokens), `toWireSample`, and `RolloutLink` (prime-rl's packing,
 * msgpack, the filesystem or ZMQ sender). A step's send does not hold the rollouts, as a trainer
 * process reading the files would not. The scheduling is continuous, as prime-rl's is: a finished
 * rollout's slot takes the next one at once.
 *
 * The baseline is a plain client at the same concurrency: K loops that post the same multi-turn
 * requests with `node:http` (keep-alive) and `JSON.parse` the replies, nothing else. Both phases
 * are timed by the servers' own count of completion tokens sent in the window.
 *
 * Last stdout line (JSON): `value` = `tokens_per_s` = completion tokens per second through troupe,
 * `unit` "tokens/s", `baseline` = the plain client's tokens/s, `ratio` = value / baseline, then
 * CPU per 1,000 tokens (this process; the servers' apart), event-loop lag p99 and max, RSS peak,
 * tokens sent to the trainer per second, steps sent, and the load average at start and end.
 * `--profile=<file.cpuprofile>` writes a V8 CPU profile of the troupe window and prints its top
 * entries by self time on stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface, type Interface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Env, type Episode } from '@troupe/verifiers';
import { GroupScorer } from '../src/algorithms/group-scorer.ts';
import { Grpo } from '../src/algorithms/grpo.ts';
import { BatchBuilder } from '../src/samples/batch-builder.ts';
import type { TrainingSample } from '../src/samples/training-sample.ts';
import { InferencePool } from '../src/transport/inference-pool.ts';
import { RolloutLink } from '../src/transport/prime-rl-link.ts';
import { toWireSample } from '../src/transport/wire-sample.ts';
import { FLEET_SYSTEM_PROMPT, fleetTaskset, fleetTurns, fleetTurnsEnv, fleetUserMessage } from './support/fleet-env.ts';
import { summarizeProfile } from './support/profile-summary.ts';

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: '8' },
    rollouts: { type: 'string', default: '512' },
    /** Measured window per phase, seconds. */
    seconds: { type: 'string', default: '20' },
    /** Warm-up per phase before the window, seconds. */
    warmup: { type: 'string', default: '5' },
    latency: { type: 'string', default: '20' },
    'tokens-per-second': { type: 'string', default: '25000' },
    'median-tokens': { type: 'string', default: '320' },
    'group-size': { type: 'string', default: '8' },
    'step-tokens': { type: 'string', default: '262144' },
    transport: { type: 'string', default: 'filesystem' },
    'data-world-size': { type: 'string', default: '8' },
    'seq-len': { type: 'string', default: '8192' },
    profile: { type: 'string' },
    'skip-plain': { type: 'boolean', default: false },
  },
});
const servers = Number(values.servers);
const rollouts = Number(values.rollouts);
const windowSeconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const groupSize = Number(values['group-size']);
const medianTokens = Number(values['median-tokens']);
const loadStart = loadavg()[0] as number;
const MODEL = 'policy';
/** prime-rl's sampling arguments (`configs/orchestrator.py:58-64`, `:652-655` at 559b447). */
const SAMPLING = { temperature: 1, topP: 1, topK: -1, minP: 0 };

interface FleetMark {
  requests: number;
  completionTokens: number;
  refused: number;
  cpuMs: number;
  wallMs: number;
}

/** The fleet child process and a `mark()` that reads its tally since the last mark. */
async function startFleet(): Promise<{
  baseUrls: string[];
  meanTokens: number;
  mark(): Promise<FleetMark>;
  child: ChildProcess;
}> {
  const options = {
    servers,
    model: MODEL,
    latencyMs: Number(values.latency),
    tokensPerSecond: Number(values['tokens-per-second']),
    medianTokens,
  };
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'support/vllm-fleet-process.ts'), JSON.stringify(options)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: Interface = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const queue: ((line: string) => void)[] = [];
  lines.on('line', (line) => queue.shift()?.(line));
  const next = () => new Promise<string>((resolve) => queue.push(resolve));
  const first = JSON.parse(await next()) as { baseUrls: string[]; meanTokens: number };
  return {
    ...first,
    child,
    async mark() {
      const line = next();
      child.stdin?.write('mark\n');
      return JSON.parse(await line) as FleetMark;
    },
  };
}

/** The ZMQ trainer ranks' process (`support/zmq-trainer-process.ts`), once it has connected. */
async function startZmqTrainer(address: string, world: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'support/zmq-trainer-process.ts'), address, String(world)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  for await (const _ of createInterface({ input: child.stdout as NodeJS.ReadableStream })) return child;
  throw new Error('the ZMQ trainer process exited before connecting');
}

/** Runs `work` in `slots` loops until `until()` says stop, each loop starting its next item at once. */
async function keepInFlight(slots: number, until: () => boolean, work: (slot: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: slots }, async () => {
      while (!until()) await work(next++);
    }),
  );
}

/** A window: warm-up, marks around `seconds`, with lag, CPU and RSS of this process. */
async function measured(
  fleet: Awaited<ReturnType<typeof startFleet>>,
  run: (stop: () => boolean) => Promise<void>,
  profile?: string,
) {
  let stopping = false;
  const running = run(() => stopping);
  await new Promise((resolve) => setTimeout(resolve, warmupSeconds * 1000));
  const session = profile ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  await fleet.mark();
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  let rssPeak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  }, 100);
  const cpu = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, windowSeconds * 1000));
  const used = process.cpuUsage(cpu);
  const served = await fleet.mark();
  lag.disable();
  clearInterval(sampler);
  if (session && profile) {
    const { profile: data } = await session.post('Profiler.stop');
    writeFileSync(profile, JSON.stringify(data));
    session.disconnect();
    process.stderr.write(`${summarizeProfile(data, 25)}\n`);
  }
  stopping = true;
  await running;
  const seconds = served.wallMs / 1000;
  return {
    tokensPerSecond: served.completionTokens / seconds,
    requests: served.requests,
    refused: served.refused,
    cpuMs: (used.user + used.system) / 1000,
    serverCpuMs: served.cpuMs,
    seconds,
    tokens: served.completionTokens,
    lagP99Ms: lag.percentile(99) / 1e6,
    lagMaxMs: lag.max / 1e6,
    rssPeakMb: rssPeak / 1024 / 1024,
  };
}

/** The baseline: K loops posting the same conversations with `node:http` and parsing the replies. */
async function plainClient(fleet: Awaited<ReturnType<typeof startFleet>>) {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: rollouts });
  const targets = fleet.baseUrls.map((base) => new URL(`${base}/chat/completions`));
  let cursor = 0;
  const post = (body: string) =>
    new Promise<unknown>((resolve, reject) => {
      const url = targets[cursor++ % targets.length] as URL;
      const req = httpRequest(url, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization: 'Bearer EMPTY', 'content-length': Buffer.byteLength(body) },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (error) {
            reject(error);
          }
        });
      });
      req.end(body);
    });
  const result = await measured(fleet, (stop) =>
    keepInFlight(rollouts, stop, async (slot) => {
      const index = Math.floor(slot / groupSize);
      const messages: { role: string; content: string }[] = [{ role: 'system', content: FLEET_SYSTEM_PROMPT }];
      for (let turn = 0; turn < fleetTurns(index); turn++) {
        messages.push({ role: 'user', content: fleetUserMessage(index, turn) });
        const reply = (await post(
          JSON.stringify({
            model: MODEL,
            messages,
            temperature: 1,
            top_p: 1,
            top_k: -1,
            min_p: 0,
            logprobs: true,
            return_token_ids: true,
            cache_salt: '0',
          }),
        )) as { choices: { message: { content: string } }[] };
        messages.push({ role: 'assistant', content: reply.choices[0]?.message.content ?? '' });
      }
    }),
  );
  agent.destroy();
  return result;
}

/** troupe: the env's rollouts through interception and recording, scored, batched, packed and sent. */
async function troupe(fleet: Awaited<ReturnType<typeof startFleet>>, outputDir: string) {
  const pool = new InferencePool({ baseUrls: fleet.baseUrls, model: MODEL, sampling: SAMPLING });
  const env = await Env.create({
    definition: fleetTurnsEnv,
    config: { id: 'fleet-turns' },
    run: { model: MODEL, client: pool, sampling: SAMPLING },
  });
  const taskset = fleetTaskset({ medianTokens });
  const scorer = new GroupScorer({ algorithm: new Grpo(), groupSize });
  const builder = new BatchBuilder({ tokenBatchSize: Number(values['step-tokens']) });
  const transport = values.transport === 'zmq' ? 'zmq' : 'filesystem';
  const base = {
    dataWorldSize: Number(values['data-world-size']),
    seqLen: Number(values['seq-len']),
    padToMultipleOf: 1,
    exportSamples: false,
  };
  // ZMQ: prime-rl's trainer ranks in a child process (the sender waits for every rank's READY).
  const port = 20_000 + Math.floor(Math.random() * 30_000);
  const trainer = transport === 'zmq' ? await startZmqTrainer(`tcp://localhost:${port}`, base.dataWorldSize) : null;
  const link = await RolloutLink.open({
    config:
      transport === 'zmq'
        ? { type: 'zmq', host: 'localhost', port, outputDir, ...base }
        : { type: 'filesystem', outputDir, ...base },
  });
  let step = 0;
  let sending: Promise<unknown> = Promise.resolve();
  const sent = { steps: 0, tokens: 0, failed: 0, episodes: 0, failedEpisodes: 0 };
  const ship = (samples: TrainingSample[]) => {
    const n = ++step;
    const wire = samples.map((sample) => toWireSample(sample, { temperatures: SAMPLING.temperature }));
    sending = sending.then(() =>
      link.send({ step: n, samples: wire }).then(
        (result) => {
          sent.steps++;
          sent.tokens += result.tokens;
        },
        () => {
          sent.failed++;
        },
      ),
    );
  };
  const finished = async (episode: Episode) => {
    sent.episodes++;
    if (!episode.ok) sent.failedEpisodes++;
    const group = await scorer.addEpisode(episode);
    if (group) for (const batch of builder.addEpisodes(group)) ship(batch.samples);
  };
  const result = await measured(
    fleet,
    (stop) =>
      keepInFlight(rollouts, stop, async (slot) => {
        const index = Math.floor(slot / groupSize);
        const episode = await env.runEpisode({
          task: taskset.at(index),
          group: { id: `fleet-${index}`, index: slot % groupSize },
        });
        await finished(episode);
      }),
    values.profile,
  );
  await sending;
  await link.close();
  trainer?.stdin?.end();
  return { ...result, sent };
}

async function main(): Promise<void> {
  const fleet = await startFleet();
  const outputDir = mkdtempSync(join(tmpdir(), 'troupe-fleet-'));
  try {
    const plain = values['skip-plain'] ? null : await plainClient(fleet);
    if (plain) process.stderr.write(`plain client: ${Math.round(plain.tokensPerSecond)} tokens/s\n`);
    const ours = await troupe(fleet, outputDir);
    const value = ours.tokensPerSecond;
    const baseline = plain?.tokensPerSecond ?? null;
    const round = (x: number, digits = 1) => Number(x.toFixed(digits));
    process.stderr.write(
      `troupe: ${Math.round(value)} tokens/s, ${round(ours.cpuMs / (ours.tokens / 1000), 2)} ms CPU per 1k tokens, lag p99 ${round(ours.lagP99Ms)} ms\n`,
    );
    const result = {
      name: 'fleet.orchestrator.tokens',
      value: Math.round(value),
      unit: 'tokens/s',
      baseline: baseline === null ? null : Math.round(baseline),
      ratio: baseline === null ? null : round(value / baseline, 3),
      tokens_per_s: Math.round(value),
      cpu_ms_per_1k_tokens: round(ours.cpuMs / (ours.tokens / 1000), 3),
      cpu_cores: round(ours.cpuMs / 1000 / ours.seconds, 2),
      server_cpu_ms_per_1k_tokens: round(ours.serverCpuMs / (ours.tokens / 1000), 3),
      event_loop_lag_p99_ms: round(ours.lagP99Ms),
      event_loop_lag_max_ms: round(ours.lagMaxMs),
      rss_mb_peak: Math.round(ours.rssPeakMb),
      requests_per_s: round(ours.requests / ours.seconds),
      refused: ours.refused,
      trainer_tokens_sent: ours.sent.tokens,
      steps_sent: ours.sent.steps,
      steps_failed: ours.sent.failed,
      episodes: ours.sent.episodes,
      failed_episodes: ours.sent.failedEpisodes,
      plain: plain && {
        tokens_per_s: Math.round(plain.tokensPerSecond),
        cpu_ms_per_1k_tokens: round(plain.cpuMs / (plain.tokens / 1000), 3),
        event_loop_lag_p99_ms: round(plain.lagP99Ms),
        rss_mb_peak: Math.round(plain.rssPeakMb),
      },
      servers,
      rollouts,
      group_size: groupSize,
      mean_completion_tokens: Math.round(fleet.meanTokens),
      latency_ms: Number(values.latency),
      server_tokens_per_s: Number(values['tokens-per-second']),
      transport: values.transport,
      window_s: windowSeconds,
      load: { start: round(loadStart, 2), end: round(loadavg()[0] as number, 2) },
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    fleet.child.stdin?.end();
    rmSync(outputDir, { recursive: true, force: true });
  }
}

await main();
