// `pnpm bench:inference` runs it with `--max-semi-space-size=64`, as `pnpm trainer` runs the trainer:
// 576 hands in flight allocate ≈30 MB per forward pass, and a larger young generation lets them die
// young instead of being copied and promoted (≈110 → ≈50 µs CPU per decision, 2-core CI machine, 2026-12, idle).
// And with `--no-allocation-site-pretenuring`, as `pnpm trainer` runs: hands outlive a scavenge, so V8 at
// times decides to allocate their literals (trace arrays, nodes, records) straight in the old
// generation; that garbage then keeps the young objects it points to alive until a full GC, and a
// run turns bimodal (≈7 MB survive and ≈5 MB are promoted per scavenge instead of ≈3.5 / ≈1.2:
// ratio 0.23–0.27 instead of 0.39–0.42 at load 5, same code, 2026-12-05).
// Inference throughput: decisions per second of the full Kuhn self-play loop (Env, seats, interception
// recording, micro-batched onnxruntime policy) against raw onnxruntime forward passes of the same
// model over the same rows, in one run. Two loops take turns: one forward row per decision (the
// headline: the goal was set on it), and the default loop, where identical prompts in a batch share
// one forward row, against raw passes over the same distinct rows. Raw passes run at each loop's
// mean rows per pass and mean padded length (from a warm-up in the same chunks), interleaved with the
// loops' chunks. Last line: JSON.
// Options: --hands=8192 --warm=4608 (hands per loop before the clock starts) --concurrent=576
// --profile=<file.cpuprofile> (the timed window only).

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { kuhnPokerEnv, kuhnTaskset, kuhnTraining } from '@troupe/env-kuhn-poker';
import { exportOnnx, OnnxPolicy, PolicyModelClient } from '@troupe/prime-rl/inference';
import { embeddedPolicy } from '@troupe/prime-rl/orchestrator';
import { initWeights } from '@troupe/prime-rl/policy';
import { Env, registerRuntime } from '@troupe/verifiers';
import { GameRuntime } from '../src/game-runtime.ts';

/** 1-min load average when the bench started (the JSON line reports start and end). */
const loadStart = loadavg()[0] as number;
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const hands = Number(args.get('hands') ?? 8192);
const concurrent = Number(args.get('concurrent') ?? 576);
const warmHands = Number(args.get('warm') ?? 4608);
if (!Number.isInteger(warmHands) || warmHands < concurrent) {
  throw new Error(`--warm: expected a whole number of hands ≥ --concurrent (${concurrent}), got ${args.get('warm')}`);
}
registerRuntime('game', () => new GameRuntime());
// The default training run's shape: prompt style, reply length, model, re-asks.
const run = {
  prompts: 'pass-bet' as const,
  invalidRetries: 1,
  sampling: { temperature: 1, maxTokens: 1 },
  inference: { maxBatch: 512 },
};
const { tokenizer, policy: config } = embeddedPolicy({
  sources: [{ hooks: kuhnTraining as never, options: { prompts: run.prompts }, taskset: kuhnTaskset() }],
  dModel: 32,
  layers: 1,
  heads: 4,
  ffnMult: 2,
  initStd: 0.1,
  seed: 0,
  maxTokens: run.sampling.maxTokens,
});
const onnx = exportOnnx({ config, weights: initWeights(config) });
const taskset = kuhnTaskset();

/** The loop as shipped (`shared`: identical prompts in a batch share one forward row) or one row per decision. */
async function selfPlay(shareRows: boolean) {
  const client = await PolicyModelClient.create({
    tokenizer,
    config,
    onnx,
    maxBatch: run.inference.maxBatch,
    maxTokens: run.sampling.maxTokens,
    seed: 1,
    shareRows,
  });
  const env = await Env.create({
    definition: kuhnPokerEnv,
    config: {
      id: 'kuhn-poker',
      prompts: run.prompts,
      invalidRetries: run.invalidRetries,
      player0: { runtime: 'game' },
      player1: { runtime: 'game' },
    },
    run: {
      model: 'policy',
      client,
      sampling: { temperature: run.sampling.temperature, maxTokens: run.sampling.maxTokens },
    },
  });
  /** Timed totals, and each timed chunk's CPU µs per decision (shows whether the warm-up reached the steady state). */
  const totals = { decisions: 0, promptTokens: 0, seconds: 0, cpuMs: 0, chunkCpuUs: [] as number[] };
  /** Plays `count` hands from task `from`, `concurrent` at a time; adds to `totals` when `timed`. */
  const play = async (from: number, count: number, timed: boolean) => {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const episodes = await Promise.all(
      Array.from({ length: count }, (_, i) => env.runEpisode({ task: taskset.at(from + i), group: { id: 'b', index: 0 } })),
    );
    if (!timed) return;
    const cpu = process.cpuUsage(cpu0);
    totals.seconds += (performance.now() - t0) / 1000;
    totals.cpuMs += (cpu.user + cpu.system) / 1000;
    const decisionsBefore = totals.decisions;
    for (const e of episodes)
      for (const t of e.traces)
        for (const c of t.calls) {
          totals.decisions++;
          totals.promptTokens += c.usage?.promptTokens ?? 0;
        }
    totals.chunkCpuUs.push((cpu.user + cpu.system) / (totals.decisions - decisionsBefore));
  };
  return { client, play, totals };
}

/** Raw onnxruntime: one forward pass of `batch` rows × `time` tokens (returns the pass to time). */
async function rawPass(policy: OnnxPolicy, batch: number, time: number) {
  const tokens = Int32Array.from({ length: batch * time }, (_, i) => 6 + (i % (config.vocabSize - 6)));
  const last = Array.from({ length: batch }, (_, b) => b * time + time - 1);
  return () => policy.logits({ tokens, batch, time, rows: last });
}

const shared = await selfPlay(true);
const unshared = await selfPlay(false);

type Which = 'shared' | 'unshared';
type Stats = typeof shared.client.stats;
/** What the forward passes of one loop ran over between two stats snapshots. */
function shapeOf(was: Stats, now: Stats) {
  const batches = now.batches - was.batches;
  const rows = now.rows - was.rows;
  const forwardRows = now.forwardRows - was.forwardRows;
  const cells = now.forwardCells - was.forwardCells;
  return {
    batches,
    rows,
    requestsPerPass: rows / batches,
    forwardRowsPerPass: Math.max(1, Math.round(forwardRows / batches)),
    time: Math.max(2, Math.round(cells / forwardRows)),
  };
}

// Warm-up (JIT, onnxruntime arenas, the young generation growing to its size) off the clock, in the
// timed run's chunks: it also gives the shapes (rows per pass, padded length) the raw passes
// reproduce. A short one left the timed window mostly warm-up: with 1,152 hands per loop, the first
// 2–4 timed chunks still cost 2–4× the later ones (unshared 95 and 82 µs CPU per decision in the
// first two, 22–35 later; 2-core CI machine, 2026-12-05), so the figure was the tail of the warm-up
// rather than the loop a training run plays for minutes. After 4,608 hands per loop (8 chunks) the
// first timed chunks cost at most ≈1.5× the later ones, and twice that warm-up gives the same ratio
// (4 alternating pairs: median 0.511 vs 0.512).
const warm = { shared: { ...shared.client.stats }, unshared: { ...unshared.client.stats } };
for (let start = 0; start < warmHands; start += concurrent) {
  await shared.play(10_000_000 + start, Math.min(concurrent, warmHands - start), false);
  await unshared.play(10_000_000 + start, Math.min(concurrent, warmHands - start), false);
}
const warmShapes = {
  shared: shapeOf(warm.shared, shared.client.stats),
  unshared: shapeOf(warm.unshared, unshared.client.stats),
};

// Raw forward passes of the same model over the shapes the loops run: for the shared loop, its
// distinct rows per pass (each pass credited with the requests it answers there); for the
// unshared loop, one row per request. After each chunk of the loops, as many raw passes of each
// shape as that loop ran in the chunk: loops and baselines see the same machine load.
const raw = await OnnxPolicy.load({ model: onnx, vocabSize: config.vocabSize });
const rawPasses = {
  shared: await rawPass(raw, warmShapes.shared.forwardRowsPerPass, warmShapes.shared.time),
  unshared: await rawPass(raw, warmShapes.unshared.forwardRowsPerPass, warmShapes.unshared.time),
};
for (let i = 0; i < 5; i++) {
  await rawPasses.shared();
  await rawPasses.unshared();
}
const rawTotals = { shared: { passes: 0, seconds: 0 }, unshared: { passes: 0, seconds: 0 } };
const timeRaw = async (which: Which, passes: number) => {
  const t = performance.now();
  for (let i = 0; i < passes; i++) await rawPasses[which]();
  rawTotals[which].seconds += (performance.now() - t) / 1000;
  rawTotals[which].passes += passes;
};

// --profile=<file.cpuprofile>: a V8 CPU profile of the timed window only (no start-up, no warm-up).
const profileTo = args.get('profile');
const profiler = profileTo ? new Session() : null;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}
const before = { shared: { ...shared.client.stats }, unshared: { ...unshared.client.stats } };
// The two loops take turns chunk by chunk, so a change of machine load hits both alike.
for (let start = 0; start < hands; start += concurrent) {
  const count = Math.min(concurrent, hands - start);
  const passes = { shared: shared.client.stats.batches, unshared: unshared.client.stats.batches };
  await shared.play(start, count, true);
  await unshared.play(start, count, true);
  await timeRaw('shared', Math.max(1, shared.client.stats.batches - passes.shared));
  await timeRaw('unshared', Math.max(1, unshared.client.stats.batches - passes.unshared));
}
if (profiler && profileTo) {
  const { profile } = await profiler.post('Profiler.stop');
  writeFileSync(profileTo, JSON.stringify(profile));
  profiler.disconnect();
}
await raw.release();
const shapes = {
  shared: shapeOf(before.shared, shared.client.stats),
  unshared: shapeOf(before.unshared, unshared.client.stats),
};

const figures = (which: Which) => {
  const loop = (which === 'shared' ? shared : unshared).totals;
  const shape = shapes[which];
  // Decisions per raw pass: the requests per pass of the warm-up shape it reproduces, times the
  // timed run's decisions per request (1 here: maxTokens 1).
  const rawRate =
    (rawTotals[which].passes * warmShapes[which].requestsPerPass * (loop.decisions / shape.rows)) / rawTotals[which].seconds;
  const loopRate = loop.decisions / loop.seconds;
  return {
    value: loopRate,
    baseline: rawRate,
    ratio: loopRate / rawRate,
    decisions: loop.decisions,
    seconds: loop.seconds,
    cpu_us_per_decision: (1000 * loop.cpuMs) / loop.decisions,
    forward_passes: shape.batches,
    requests_per_pass: Math.round(shape.requestsPerPass),
    forward_rows_per_pass: shape.forwardRowsPerPass,
    time: shape.time,
    chunk_cpu_us: loop.chunkCpuUs.map((us) => Math.round(us)),
  };
};
const f = { shared: figures('shared'), unshared: figures('unshared') };
for (const which of ['unshared', 'shared'] as const) {
  const x = f[which];
  console.log(
    `${which.padEnd(8)} ${x.decisions} decisions in ${x.seconds.toFixed(2)} s (${x.value.toFixed(0)}/s, ${x.cpu_us_per_decision.toFixed(0)} µs CPU each); ${x.forward_passes} passes of ${x.requests_per_pass} requests over ${x.forward_rows_per_pass} forward rows × ${x.time} tokens; raw onnxruntime over those rows: ${x.baseline.toFixed(0)} decisions/s → ratio ${x.ratio.toFixed(3)}`,
  );
  // Steady state or still warming up: the first timed chunks should cost what the later ones do.
  console.log(`${''.padEnd(8)} CPU µs per decision, timed chunk by chunk: ${x.chunk_cpu_us.join(' ')}`);
}
const loadEnd = loadavg()[0] as number;
// The headline compares one forward row per decision with raw passes of the same rows (the goal's
// definition, set before rows were shared); `shared` is the default loop against raw passes over
// the same distinct rows it ran, i.e. the same work onnxruntime did for it.
console.log(
  JSON.stringify({
    name: 'selfplay_decisions_per_second_vs_raw_onnx',
    value: f.unshared.value,
    unit: 'decisions/s',
    baseline: f.unshared.baseline,
    ratio: f.unshared.ratio,
    batch: f.unshared.forward_rows_per_pass,
    time: f.unshared.time,
    cpu_us_per_decision: f.unshared.cpu_us_per_decision,
    shared: f.shared,
    hands,
    warm_hands: warmHands,
    goal: 0.5,
    load: { start: Number(loadStart.toFixed(2)), end: Number(loadEnd.toFixed(2)) },
  }),
);
