// `pnpm experiment:proposer-solver [--steps 300] [--seeds 0,1,2] [--out runs/experiment-proposer-solver]
// [--config apps/trainer/configs/proposer-solver.toml]`: Hierarchical GRPO, GRPO with proposer and
// solver pooled, and RAE on the config (default configs/proposer-solver.toml, `claims = "executed"`;
// configs/proposer-solver-literal.toml is the literal rules) at the same budget, 3 seeds each. Prints markdown tables (mean ± std over seeds) — the
// training means of learnability, validity and proposed difficulty, and the final solver
// accuracy on the probe set per difficulty — on stdout, progress on stderr; writes results.json.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ExperimentArm, markdownTable, meanOver, runExperiment, writeResults } from '../src/experiment.ts';
import type { StepMetrics } from '../src/run.ts';
import { applySet, readRunConfigFile } from '../src/run-config.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: join(import.meta.dirname, '..', 'configs', 'proposer-solver.toml') },
    steps: { type: 'string', default: '300' },
    out: { type: 'string', default: 'runs/experiment-proposer-solver' },
    seeds: { type: 'string', default: '0,1,2' },
  },
});
const steps = Number(values.steps);
if (!Number.isInteger(steps) || steps < 1) {
  console.error(`experiment:proposer-solver: --steps must be a positive integer, got ${values.steps}`);
  process.exit(2);
}
const seeds = values.seeds.split(',').map(Number);
const base = await readRunConfigFile(values.config);
const variant = (seed: number, algorithm: string) => {
  const config = structuredClone(base);
  for (const set of [`seed=${seed}`, `max_steps=${steps}`, 'checkpoint_every=0', `train.source.0.algorithm=${algorithm}`])
    applySet(config, set);
  return config;
};
const arms: ExperimentArm[] = [
  {
    name: 'Hierarchical GRPO',
    id: 'hgrpo',
    config: (seed) => variant(seed, '{"type":"hierarchical-grpo","episodeAgents":["solver"]}'),
  },
  { name: 'GRPO (roles pooled)', id: 'grpo', config: (seed) => variant(seed, '{"type":"grpo"}') },
  { name: 'RAE (per-role EMA baseline)', id: 'rae', config: (seed) => variant(seed, '{"type":"rae","decay":0.95}') },
];
const key = (k: string) => `train/proposer-solver/${k}`;
const lengths = [1, 2, 3, 4, 5, 6, 7, 8];
const training = [
  {
    name: 'Learnability (proposer reward)',
    value: ({ metrics }: { metrics: StepMetrics[] }) => meanOver(metrics, key('proposer/reward/mean')),
  },
  {
    name: 'Proposer validity',
    value: ({ metrics }: { metrics: StepMetrics[] }) => meanOver(metrics, key('proposer/metric/valid/mean')),
  },
  {
    name: 'Proposed difficulty (mean length)',
    value: ({ metrics }: { metrics: StepMetrics[] }) => meanOver(metrics, key('proposer/metric/difficulty/mean')),
  },
  {
    name: 'Solve rate',
    value: ({ metrics }: { metrics: StepMetrics[] }) => meanOver(metrics, key('proposer/metric/solve_rate/mean')),
  },
  {
    name: 'Learnability, last 10% of steps',
    value: ({ metrics }: { metrics: StepMetrics[] }) =>
      meanOver(metrics.slice(-Math.max(1, Math.round(metrics.length / 10))), key('proposer/reward/mean')),
  },
];
const probe = [
  ...lengths.map((k) => ({
    name: `len ${k}`,
    value: ({ last }: { last: StepMetrics }) => Number(last[`eval/proposer-solver/probe/accuracy/len${k}`]),
  })),
  { name: 'mean', value: ({ last }: { last: StepMetrics }) => Number(last['eval/proposer-solver/probe/accuracy/mean']) },
];
const columns = [...training, ...probe];

console.error(`[experiment:proposer-solver] ${values.config}: ${arms.length} arms × ${seeds.length} seeds, ${steps} steps each`);
const result = await runExperiment({ name: 'experiment:proposer-solver', arms, seeds, columns, out: values.out });
const rows = (cols: typeof columns) =>
  arms.map((arm) => ({
    name: arm.name,
    values: cols.map((c) => result.runs.filter((r) => r.arm === arm.name).map((r) => r.values[c.name] as number)),
  }));
const episodes = result.runs[0]?.episodes ?? 0;
const tables = [
  markdownTable({
    title: `Proposer-solver, means over training (${seeds.length} seeds, ${steps} steps = ${episodes} episodes each)`,
    columns: training.map((c) => c.name),
    rows: rows(training),
  }),
  markdownTable({
    title: `Solver accuracy on the probe set at step ${steps}, by sequence length (chance ≈ 0.1)`,
    columns: probe.map((c) => c.name),
    rows: rows(probe),
    digits: 2,
  }),
];
const path = await writeResults(values.out, {
  experiment: 'proposer-solver',
  config: values.config,
  steps,
  seeds,
  ...result,
  tables,
});
console.log(`${tables.join('\n\n')}\n`);
console.log(
  `${result.seconds.toFixed(0)} s in all on ${result.load.cores} cores; 1-minute load ${result.load.start[0]?.toFixed(1)} at the start, ${result.load.end[0]?.toFixed(1)} at the end; wrote ${path}`,
);
