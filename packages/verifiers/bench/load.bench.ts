/**
 * `pnpm bench:load`: 1,000 concurrent single-agent episodes, each an HTTP program that calls
 * `register(session).baseUrl` of the interception server with its rollout secret (the route an
 * external program takes; the programs run in a separate fleet process, as real ones would),
 * against a scripted model server with 50 ms latency in its own process. Measured: the
 * process that runs the env, the agents, interception and the model client.
 *
 * Last stdout line (JSON): episodes, lost (episodes missing from traces.jsonl or not ok),
 * episodes_per_s, event_loop_lag_p99_ms (perf_hooks.monitorEventLoopDelay during the episodes),
 * rss_mb_peak, baseline (the ideal bound: every episode at once, each taking the model latency,
 * 1000 / 50 ms = 20,000 episodes/s), ratio = episodes_per_s / baseline, and direct_per_s: the
 * same number of bare concurrent requests sent straight to the model server, measured in this run,
 * and idle_process_lag_p99_ms: the lag p99 of an idle Node process during the same window (how
 * much of the lag is the machine, not us), and cpu_ms_per_episode: this process's CPU time (user +
 * system) per episode during the window, the figure machine load changes least.
 * `--profile=<file.cpuprofile>` writes a V8 CPU profile of the measured window. `--stalls` adds
 * `stalls`: the turns of the window that kept a 1 ms timer waiting ≥ 20 ms (count, and the worst
 * five by process CPU: when, wall ms, CPU ms); with `--profile` too, the functions sampled in each
 * of those five go to stderr. The tracer's timer wakes the loop every millisecond and reads the
 * CPU clock each time (≈5% of the process's CPU): leave it off for the headline figures.
 *
 * The taskset (1,000 `Task`s) is built before the window, and the lag histogram runs one timer
 * interval before the eval starts: it records the time between its timer's firings from the
 * second firing on, so without that a stall at the eval's start would not be counted.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { registerHarness } from '../src/agent/plugins.ts';
import { singleAgentEnv } from '../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../src/env/env.ts';
import { runEval } from '../src/eval/eval-runner.ts';
import { InterceptionServer } from '../src/interception/interception-server.ts';
import { OpenAICompatibleClient } from '../src/model/openai-client.ts';
import { reliabilityTaskset } from '../test/reliability/support/arithmetic-script.ts';
import { registerReliabilityPlugins } from '../test/reliability/support/register-plugins.ts';
import { FleetHarness } from './support/fleet-harness.ts';
import { startModelProcess } from './support/model-process.ts';
import { attribute, type CpuProfile, type Stall, traceStalls } from './support/stall-trace.ts';

const { values } = parseArgs({
  options: {
    episodes: { type: 'string', default: '1000' },
    latency: { type: 'string', default: '50' },
    /** A V8 CPU profile of the measured window only, written to this file. */
    profile: { type: 'string' },
    /** Trace the window's long event-loop turns (see the header). */
    stalls: { type: 'boolean', default: false },
  },
});
const episodes = Number(values.episodes);
const latencyMs = Number(values.latency);
/** 1-min load average when the bench started (the JSON line reports start and end). */
const loadStart = loadavg()[0]!;

/** `count` bare concurrent chat requests straight to the model server: what the hardware allows. */
async function directBaseline(url: string, count: number): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `Task ${i}: What is 1 + ${i}?` }] }),
      }).then((r) => r.text()),
    ),
  );
  return count / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  registerReliabilityPlugins();
  const fleet = new FleetHarness();
  registerHarness('fleet_program', () => fleet);
  const model = await startModelProcess(latencyMs);
  const interception = new InterceptionServer();
  await interception.start();
  const outDir = mkdtempSync(join(tmpdir(), 'troupe-load-'));
  try {
    const client = new OpenAICompatibleClient({
      baseUrl: `${model.url}/v1`,
      apiKey: 'sk-load',
      model: 'scripted-model',
      retry: { maxRetries: 0 },
    });
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'fleet-program', runtime: 'memory' } },
      run: { model: 'scripted-model', client },
      interception: async () => interception,
    });
    // Warm up both paths (JIT, sockets) off the clock.
    await directBaseline(model.url, 50);
    await runEval({
      env,
      taskset: reliabilityTaskset(50),
      outDir: join(outDir, 'warmup'),
      model: 'scripted-model',
      concurrency: 50,
    });
    const direct = await directBaseline(model.url, episodes);

    const idle = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'support/program-fleet-process.ts'), '--idle'],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    const idleReport = new Promise<number>((resolve) => {
      createInterface({ input: idle.stdout as NodeJS.ReadableStream }).once('line', (line) =>
        resolve((JSON.parse(line) as { idle_lag_p99_ms: number }).idle_lag_p99_ms),
      );
    });
    await new Promise((r) => setTimeout(r, 1500));
    // process.memoryUsage.rss() only, 10 times a second: the full memoryUsage() also walks the V8
    // heap spaces, and at 50 samples/s the sampler cost ≈4% of the measured process's CPU.
    let rssPeak = process.memoryUsage.rss();
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    }, 100);
    const profiler = values.profile ? new Session() : null;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    const taskset = reliabilityTaskset(episodes);
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    await new Promise((r) => setTimeout(r, 15));
    const stallTracer = values.stalls ? traceStalls(20) : null;
    const started = performance.now();
    const cpuStart = process.cpuUsage();
    await runEval({ env, taskset, outDir, model: 'scripted-model', concurrency: episodes });
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuStart);
    lag.disable();
    const stalls = stallTracer?.stop() ?? [];
    const worst = [...stalls].sort((a, b) => b.cpuMs - a.cpuMs).slice(0, 5);
    if (profiler && values.profile) {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(values.profile, JSON.stringify(profile));
      profiler.disconnect();
      if (values.stalls) printStalls(worst, profile as CpuProfile);
    }
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    idle.stdin?.end();
    const idleLag = await idleReport;

    const lines = readFileSync(join(outDir, 'traces.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim());
    const parsed = lines.map(
      (l) => JSON.parse(l) as { ok: boolean; task: { key: string }; traces: { errors: { type: string; message: string }[] }[] },
    );
    const okKeys = new Set(parsed.filter((e) => e.ok).map((e) => e.task.key));
    const failures: Record<string, number> = {};
    for (const e of parsed.filter((p) => !p.ok)) {
      const error = e.traces[0]?.errors[0];
      const label = `${error?.type}: ${error?.message.slice(0, 80)}`;
      failures[label] = (failures[label] ?? 0) + 1;
    }
    const episodesPerSecond = episodes / seconds;
    const baseline = episodes / (latencyMs / 1000);
    const result = {
      name: 'load',
      value: Number(episodesPerSecond.toFixed(1)),
      unit: 'episodes/s',
      baseline,
      ratio: Number((episodesPerSecond / baseline).toFixed(4)),
      episodes,
      lost: episodes - okKeys.size,
      episodes_per_s: Number(episodesPerSecond.toFixed(1)),
      event_loop_lag_p99_ms: Number((lag.percentile(99) / 1e6).toFixed(1)),
      event_loop_lag_max_ms: Number((lag.max / 1e6).toFixed(1)),
      idle_process_lag_p99_ms: Number(idleLag.toFixed(1)),
      rss_mb_peak: Math.round(rssPeak / 1024 / 1024),
      cpu_ms_per_episode: Number(((cpu.user + cpu.system) / 1000 / episodes).toFixed(2)),
      wall_s: Number(seconds.toFixed(2)),
      latency_ms: latencyMs,
      direct_per_s: Number(direct.toFixed(1)),
      ratio_vs_direct: Number((episodesPerSecond / direct).toFixed(4)),
      failures,
      ...(values.stalls ? { stalls: stallSummary(stalls, worst) } : {}),
      load: { start: Number(loadStart.toFixed(2)), end: Number(loadavg()[0]!.toFixed(2)) },
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await interception.close();
    fleet.close();
    model.child.kill('SIGTERM');
    rmSync(outDir, { recursive: true, force: true });
  }
}

/** `stalls` of the JSON line: how many long turns, and the worst five by CPU. */
function stallSummary(stalls: Stall[], worst: Stall[]) {
  const round = (x: number) => Number(x.toFixed(1));
  return {
    over_20ms: stalls.length,
    over_50ms: stalls.filter((s) => s.wallMs >= 50).length,
    over_100ms: stalls.filter((s) => s.wallMs >= 100).length,
    worst_by_cpu: worst.map((s) => ({ at_ms: Math.round(s.atMs), wall_ms: round(s.wallMs), cpu_ms: round(s.cpuMs) })),
  };
}

/** The functions sampled in each of the worst turns, on stderr. */
function printStalls(worst: Stall[], profile: CpuProfile): void {
  for (const { stall, samples, frames } of attribute(worst, profile)) {
    process.stderr.write(
      `stall at +${Math.round(stall.atMs)} ms: ${stall.wallMs.toFixed(1)} ms wall, ${stall.cpuMs.toFixed(1)} ms CPU, ${samples} samples\n${frames.map((f) => `  ${f}\n`).join('')}`,
    );
  }
}

await main();
