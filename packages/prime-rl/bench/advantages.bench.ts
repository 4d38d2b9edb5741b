/**
 * pnpm bench:advantages — time to score AND build training samples for 1,000,000 single-token
 * traces in groups of 16, for each built-in algorithm, against a plain loop that only sums the
 * rewards over the same traces (the memory-bound floor), in one run.
 *
 * The traces are built before timing (reported separately as `buildMs`). Each measurement is the
 * median of REPEATS runs after one warm-up; a floor run precedes every timed run, and the baseline
 * is the median of those floor runs. The timed path per group is: `scoreGroup(episodes)`,
 * then `BatchBuilder.addEpisodes` (trace → TrainingSample, batch cut every 128 traces (prime-rl's default batch_size), the
 * zero-advantage filter on). The last stdout line is one JSON object.
 *
 * `pnpm bench:advantages` runs node with `--max-semi-space-size=64`, as `pnpm trainer` runs the
 * process that scores groups and builds batches; the JSON's `nodeFlags` says which flags the run
 * had. The traces are built before timing, so they are in the old generation when scored, as a
 * trainer's are (hands stay in flight across several young collections). Anything scoring keeps
 * alive per trace grows the old generation into freshly mapped pages: until the nodes' scalar
 * `advantage`, RAE's values (against a running baseline, never repeated) were one new array per
 * trace, ≈14 minor page faults per 1,000 traces. The JSON's `pageFaultsPerKTrace` reports the
 * faults per algorithm, and `pageFaultMs` what they cost: the bench measures the CPU one fault
 * takes in this process (`pageFaultUs`, from touching 64 MB of fresh memory), which on a virtual
 * machine can be tens of times a bare-metal fault's.
 *
 * The timed runs re-score nodes scored before (by the warm-up). The warm-up runs are reported
 * apart (`warmUpMs`): the first algorithm's warm-up scores nodes that never had an advantage, and
 * pays for adding the field to a million objects (with `--only NAME`, that algorithm's).
 */
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Episode, Trace } from '@troupe/verifiers';
import { seededRandom } from '@troupe/verifiers/random';
import type { Algorithm } from '../src/algorithms/algorithm.ts';
import { createAlgorithm } from '../src/algorithms/registry.ts';
import { traceReward } from '../src/algorithms/trainable-traces.ts';
import { BatchBuilder } from '../src/samples/batch-builder.ts';
import { packMicroBatches } from '../src/samples/pack-micro-batches.ts';
import type { TrainingSample } from '../src/samples/training-sample.ts';

const tracesFlag = process.argv.indexOf('--traces');
/** Number of traces (default 1,000,000; `--traces N` for a quicker look, a multiple of 16). */
const NUM_TRACES = tracesFlag > 0 ? Number(process.argv[tracesFlag + 1]) : 1_000_000;
const onlyFlag = process.argv.indexOf('--only');
/** `--only NAME[,NAME]`: time only these algorithms (e.g. to profile one with `node --cpu-prof`). */
const ONLY = onlyFlag > 0 ? new Set(process.argv[onlyFlag + 1]!.split(',')) : null;
const GROUP_SIZE = 16;
const EPISODES_PER_HIERARCHICAL_GROUP = 4; // 1 proposer + 3 solvers each: 16 traces per group
const REPEATS = 3;
/** Traces per batch: prime-rl's default `batch_size`. */
const BATCH_SIZE = 128;
const ENV = 'bench';

/** The core's seeded PRNG, so every run draws the same values. */
const random = seededRandom;

function buildData() {
  const next = random(42);
  const task = { key: 'k', hash: 'h', data: {} };
  const proposer = { name: 'proposer', trainable: true };
  const solver = { name: 'solver', trainable: true };
  const message = { role: 'assistant' as const, content: 'x' };
  const traces: Trace[] = new Array(NUM_TRACES);
  for (let i = 0; i < NUM_TRACES; i++) {
    const trace = new Trace({ id: `t${i}`, task, agent: i % 4 === 0 ? proposer : solver });
    trace.nodes.push({
      id: 0,
      parent: null,
      message,
      sampled: true,
      timestamp: 0,
      tokenIds: [i % 50_000],
      mask: [true],
      logprobs: [-0.5],
      tokenParent: null,
    });
    trace.rewards.correct = { score: next() < 0.5 ? 1 : 0, weight: 1 };
    traces[i] = trace;
  }
  // Flat view: groups of 16 one-trace episodes (grpo, rae, max-rl and the floor).
  // Hierarchical view of the same traces: groups of 4 episodes × (1 proposer + 3 solvers).
  const flat: Episode[][] = [];
  const hierarchical: Episode[][] = [];
  for (let g = 0; g < NUM_TRACES / GROUP_SIZE; g++) {
    const groupId = `g${g}`;
    const flatGroup: Episode[] = [];
    const hierarchicalGroup: Episode[] = [];
    for (let e = 0; e < GROUP_SIZE; e++) {
      const episode = new Episode({ id: `f${g}.${e}`, env: { id: ENV }, task, group: { id: groupId, index: e } });
      episode.traces.push(traces[g * GROUP_SIZE + e]!);
      flatGroup.push(episode);
    }
    const perEpisode = GROUP_SIZE / EPISODES_PER_HIERARCHICAL_GROUP;
    for (let e = 0; e < EPISODES_PER_HIERARCHICAL_GROUP; e++) {
      const episode = new Episode({ id: `h${g}.${e}`, env: { id: ENV }, task, group: { id: groupId, index: e } });
      for (let t = 0; t < perEpisode; t++) episode.traces.push(traces[g * GROUP_SIZE + e * perEpisode + t]!);
      hierarchicalGroup.push(episode);
    }
    flat.push(flatGroup);
    hierarchical.push(hierarchicalGroup);
  }
  return { traces, flat, hierarchical };
}

/** CPU time of this process (user + system, all threads, GC included) in ms. */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Minor page faults of this process so far: fresh memory the heap maps in. */
function pageFaults(): number {
  return process.resourceUsage().minorPageFault;
}

/**
 * What one minor page fault costs this process, in µs: the CPU time to touch one byte per 4 KB of
 * 64 MB of fresh memory, per fault taken (median of three). A virtual machine's faults can cost
 * tens of times a bare-metal one; RAE's old-generation growth pays it once per new page.
 */
function pageFaultCostUs(): number {
  const costs: number[] = [];
  for (let r = 0; r < 3; r++) {
    const faultsStart = pageFaults();
    const cpuStart = cpuMs();
    const fresh = Buffer.allocUnsafeSlow(64 * 1024 * 1024);
    for (let i = 0; i < fresh.length; i += 4096) fresh[i] = 1;
    const faults = pageFaults() - faultsStart;
    costs.push(faults > 0 ? ((cpuMs() - cpuStart) * 1000) / faults : 0);
  }
  return median(costs);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function floor(groups: readonly Episode[][]): { ms: number; cpuMs: number; sum: number } {
  const start = performance.now();
  const cpuStart = cpuMs();
  let sum = 0;
  for (let g = 0; g < groups.length; g++) {
    const episodes = groups[g]!;
    for (let e = 0; e < episodes.length; e++) {
      const traces = episodes[e]!.traces;
      for (let t = 0; t < traces.length; t++) sum += traceReward(traces[t]!);
    }
  }
  return { ms: performance.now() - start, cpuMs: cpuMs() - cpuStart, sum };
}

interface Run {
  ms: number;
  cpuMs: number;
  pageFaults: number;
  samples: number;
  droppedSamples: number;
  kept: TrainingSample[];
}

function scoreAndSample(algorithm: Algorithm, groups: readonly Episode[][], keep: boolean): Run {
  const builder = new BatchBuilder({ batchSize: BATCH_SIZE });
  const kept: TrainingSample[] = [];
  let samples = 0;
  let droppedSamples = 0;
  const start = performance.now();
  const cpuStart = cpuMs();
  const faultsStart = pageFaults();
  for (let g = 0; g < groups.length; g++) {
    const episodes = groups[g]!;
    algorithm.scoreGroup(episodes);
    const batches = builder.addEpisodes(episodes);
    for (let b = 0; b < batches.length; b++) {
      const batch = batches[b]!;
      samples += batch.samples.length;
      droppedSamples += batch.droppedSamples;
      if (keep) for (const sample of batch.samples) kept.push(sample);
    }
  }
  const last = builder.flush();
  if (last) {
    samples += last.samples.length;
    droppedSamples += last.droppedSamples;
    if (keep) kept.push(...last.samples);
  }
  return {
    ms: performance.now() - start,
    cpuMs: cpuMs() - cpuStart,
    pageFaults: pageFaults() - faultsStart,
    samples,
    droppedSamples,
    kept,
  };
}

const loadStart = loadavg()[0]!;
const heapBefore = process.memoryUsage().heapUsed;
const buildStart = performance.now();
const data = buildData();
const buildMs = performance.now() - buildStart;
const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;

const ALGORITHMS = [
  { name: 'grpo', config: { type: 'grpo' }, groups: data.flat },
  { name: 'hierarchical-grpo', config: { type: 'hierarchical-grpo', episodeAgents: ['solver'] }, groups: data.hierarchical },
  { name: 'rae', config: { type: 'rae' }, groups: data.flat },
  { name: 'max-rl', config: { type: 'max-rl' }, groups: data.flat },
] as const;
const algorithms = ALGORITHMS.filter(({ name }) => ONLY === null || ONLY.has(name));

interface Result {
  ms: number;
  cpuMs: number;
  ratio: number;
  cpuRatio: number;
  nsPerTrace: number;
  /** Minor page faults per 1,000 traces (median run): old-generation growth into fresh pages. */
  pageFaultsPerKTrace: number;
  samples: number;
  droppedSamples: number;
}
// The floor runs next to every timed run (floor, algorithm, floor, algorithm, …), so that a change
// of load during the bench moves both; the baseline is the median of all of them.
floor(data.flat); // warm-up
const floorRuns: ReturnType<typeof floor>[] = [];
const runsOf = new Map<string, Run[]>();
/** Each algorithm's warm-up run: the first scoring of nodes that had never been scored (untimed in the ratio; reported). */
const firstOf = new Map<string, Run>();
for (const { name, config, groups } of algorithms) {
  firstOf.set(name, scoreAndSample(createAlgorithm(config), groups, false)); // warm-up
  const runs: Run[] = [];
  for (let r = 0; r < REPEATS; r++) {
    floorRuns.push(floor(data.flat));
    runs.push(scoreAndSample(createAlgorithm(config), groups, false));
  }
  runsOf.set(name, runs);
}
const baseline = { ms: median(floorRuns.map((r) => r.ms)), cpuMs: median(floorRuns.map((r) => r.cpuMs)) };
const results: Record<string, Result> = {};
for (const [name, runs] of runsOf) {
  const ms = median(runs.map((run) => run.ms));
  const cpu = median(runs.map((run) => run.cpuMs));
  results[name] = {
    ms,
    cpuMs: cpu,
    ratio: ms / baseline.ms,
    cpuRatio: cpu / baseline.cpuMs,
    nsPerTrace: (ms * 1e6) / NUM_TRACES,
    pageFaultsPerKTrace: (median(runs.map((run) => run.pageFaults)) * 1000) / NUM_TRACES,
    samples: runs[0]!.samples,
    droppedSamples: runs[0]!.droppedSamples,
  };
}
const faultUs = pageFaultCostUs();
/** CPU the median run of an algorithm spent taking its page faults, at {@link faultUs} each (ms). */
const faultMsOf = (r: Result) => (((r.pageFaultsPerKTrace * NUM_TRACES) / 1000) * faultUs) / 1000;
let packMs = 0;
let microBatches = 0;
// Packing, timed on its own: grpo's samples from one more (untimed) run that keeps them. Kept
// apart from the timed runs, whose batches are dropped as they come: a million samples held to
// the end would be promoted to the old generation and charge the collector's work to the timed
// runs that follow.
if (results.grpo) {
  const kept = scoreAndSample(createAlgorithm({ type: 'grpo' }), data.flat, true).kept;
  const start = performance.now();
  microBatches = packMicroBatches({ samples: kept, microBatchLength: 2048 }).microBatches.length;
  packMs = performance.now() - start;
}

const row = (cells: string[]) => cells.map((cell, i) => cell.padEnd([36, 11, 10, 9, 11, 10][i] ?? 0)).join('');
const lines = [
  `traces: ${NUM_TRACES.toLocaleString('en')} single-token, groups of ${GROUP_SIZE}; median of ${REPEATS} runs; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`,
  `build traces+episodes (untimed setup): ${buildMs.toFixed(0)} ms, ~${heapMb.toFixed(0)} MB heap`,
  '',
  row(['path', 'wall ms', 'ns/trace', '× floor', 'cpu ms', '× floor', 'samples']),
  row([
    'floor: sum rewards',
    baseline.ms.toFixed(1),
    ((baseline.ms * 1e6) / NUM_TRACES).toFixed(1),
    '1.0',
    baseline.cpuMs.toFixed(1),
    '1.0',
    '-',
  ]),
];
for (const [name, r] of Object.entries(results)) {
  lines.push(
    row([
      `${name}: score + samples`,
      r.ms.toFixed(1),
      r.nsPerTrace.toFixed(1),
      r.ratio.toFixed(1),
      r.cpuMs.toFixed(1),
      r.cpuRatio.toFixed(1),
      String(r.samples),
    ]),
  );
}
lines.push(
  '',
  `page faults: ${faultUs.toFixed(1)} µs of CPU each (64 MB of fresh memory touched); per algorithm, faults × that cost: ${Object.entries(
    results,
  )
    .map(([name, r]) => `${name} ${faultMsOf(r).toFixed(0)} ms`)
    .join(', ')}`,
  `warm-up runs (untimed; the first algorithm's scores nodes never scored before, which adds the field): ${[...firstOf]
    .map(
      ([name, run]) => `${name} ${run.ms.toFixed(0)} ms, ${((run.pageFaults * 1000) / NUM_TRACES).toFixed(1)} faults/1k traces`,
    )
    .join('; ')}`,
  results.grpo
    ? `FFD packing of grpo's ${results.grpo.samples} samples into 2048-token micro-batches: ${packMs.toFixed(0)} ms (${microBatches} micro-batches)`
    : '',
);
console.log(lines.join('\n'));

const slowest = Object.entries(results).reduce((a, b) => (b[1].ms > a[1].ms ? b : a));
const round = (value: number, digits = 2) => Number(value.toFixed(digits));
console.log(
  JSON.stringify({
    name: 'advantages.score-and-sample.slowest-algorithm',
    value: round(slowest[1].ms),
    unit: 'ms',
    baseline: round(baseline.ms),
    ratio: round(slowest[1].ms / baseline.ms),
    slowest: slowest[0],
    cpuMs: round(slowest[1].cpuMs),
    baselineCpuMs: round(baseline.cpuMs),
    cpuRatio: round(slowest[1].cpuRatio),
    traces: NUM_TRACES,
    groupSize: GROUP_SIZE,
    nodeFlags: process.execArgv.filter((flag) => flag.startsWith('--max-')),
    repeats: REPEATS,
    load: { start: round(loadStart), end: round(loadavg()[0]!) },
    pageFaultUs: round(faultUs),
    buildMs: round(buildMs, 1),
    packMs: round(packMs, 1),
    algorithms: Object.fromEntries(
      Object.entries(results).map(([name, r]) => [
        name,
        {
          ms: round(r.ms),
          ratio: round(r.ratio),
          cpuMs: round(r.cpuMs),
          cpuRatio: round(r.cpuRatio),
          nsPerTrace: round(r.nsPerTrace, 1),
          pageFaultsPerKTrace: round(r.pageFaultsPerKTrace, 1),
          pageFaultMs: round(faultMsOf(r), 1),
          warmUpMs: round(firstOf.get(name)!.ms),
          warmUpPageFaultsPerKTrace: round((firstOf.get(name)!.pageFaults * 1000) / NUM_TRACES, 1),
          samples: r.samples,
        },
      ]),
    ),
  }),
);
