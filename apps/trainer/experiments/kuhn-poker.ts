// `pnpm experiment:kuhn [--steps 150] [--seeds 0,1,2] [--out runs/experiment-kuhn]`: four
// credit-assignment arms on Kuhn poker at the same budget (steps × 72 groups × 8 hands), 3 seeds
// each — RAE (per-role EMA baseline), GRPO with the two seats pooled, RAE against an opponent
// pool (configs/kuhn-pool.toml), and RAE with a per-(role, own card) baseline. Prints a markdown
// table (mean ± std over seeds) on stdout, progress on stderr, and writes results.json.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG } from '../src/default-config.ts';
import { type ExperimentArm, markdownTable, meanOver, runExperiment, writeResults } from '../src/experiment.ts';
import type { StepMetrics } from '../src/run.ts';
import { applySet, readRunConfigFile } from '../src/run-config.ts';

const POOL_CONFIG = join(import.meta.dirname, '..', 'configs', 'kuhn-pool.toml');
const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '150' },
    'max-steps': { type: 'string' },
    out: { type: 'string', default: 'runs/experiment-kuhn' },
    seeds: { type: 'string', default: '0,1,2' },
    arms: { type: 'string' },
  },
});
const steps = Number(values['max-steps'] ?? values.steps);
if (!Number.isInteger(steps) || steps < 1) {
  console.error(`experiment:kuhn: --steps must be a positive integer, got ${values['max-steps'] ?? values.steps}`);
  process.exit(2);
}
const seeds = values.seeds.split(',').map(Number);
const base = await readRunConfigFile(DEFAULT_CONFIG);
const pooled = await readRunConfigFile(POOL_CONFIG);
// The pool config's snapshot interval (25 of 700 steps) scaled to the budget; 8 snapshots kept.
const every = Math.max(1, Math.round((25 * steps) / 700));

function variant(from: Record<string, unknown>, seed: number, sets: string[]): Record<string, unknown> {
  const config = structuredClone(from);
  for (const set of [`seed=${seed}`, `max_steps=${steps}`, 'checkpoint_every=0', ...sets]) applySet(config, set);
  return config;
}

const allArms: ExperimentArm[] = [
  {
    name: 'RAE (per-role EMA baseline)',
    id: 'rae',
    config: (seed) => variant(base, seed, ['train.source.0.algorithm={"type":"rae","decay":0.95}']),
  },
  {
    name: 'GRPO (roles pooled)',
    id: 'grpo',
    config: (seed) => variant(base, seed, ['train.source.0.algorithm={"type":"grpo"}']),
  },
  {
    name: `RAE vs an opponent pool (keep 8, every ${every}, recent)`,
    id: 'rae-pool',
    config: (seed) =>
      variant(pooled, seed, [
        `train.source.0.roles.player1.pool={"of":"main","keep":8,"every":${every},"sample":"recent"}`,
        `train.source.1.roles.player0.pool={"of":"main","keep":8,"every":${every},"sample":"recent"}`,
      ]),
  },
  {
    name: 'RAE per-(role, own card) baseline',
    id: 'rae-card',
    config: (seed) => variant(base, seed, ['train.source.0.algorithm={"type":"rae","decay":0.95,"key":"info.kuhn.card"}']),
  },
];
const arms = allArms.filter((arm) => !values.arms || values.arms.split(',').includes(arm.id));

/** The first source's key of an evaluator metric (`eval/<source>/<name>`). */
const evalKey = (m: StepMetrics, name: string) => Object.keys(m).find((k) => new RegExp(`^eval/[^/]+/${name}$`).test(k)) ?? '';
/** The first source's name (the pool arm's player 0 trains in `seat0-vs-pool`). */
const firstSource = (m: StepMetrics) =>
  (Object.keys(m).find((k) => /^train\/[^/]+\/player0\/reward\/mean$/.test(k)) ?? '').split('/')[1];
const tail = (metrics: StepMetrics[]) => metrics.slice(-10);

const columns = [
  { name: 'NashConv (last iterate)', value: ({ last }: { last: StepMetrics }) => Number(last[evalKey(last, 'nash_conv')]) },
  {
    name: 'NashConv (average policy)',
    value: ({ last }: { last: StepMetrics }) => Number(last[evalKey(last, 'nash_conv_average')]),
  },
  {
    name: 'Game value (exact, self-play)',
    value: ({ last }: { last: StepMetrics }) => Number(last[evalKey(last, 'game_value')]),
  },
  {
    name: 'Player-0 payoff / hand (batch, last 10 steps)',
    value: ({ metrics, last }: { metrics: StepMetrics[]; last: StepMetrics }) =>
      meanOver(tail(metrics), `train/${firstSource(last)}/player0/reward/mean`),
  },
  {
    name: 'Forfeit rate (last 10 steps)',
    value: ({ metrics }: { metrics: StepMetrics[] }) => {
      const keys = Object.keys(metrics.at(-1) ?? {}).filter((k) => /^train\/[^/]+\/player[01]\/metric\/forfeit\/mean$/.test(k));
      const sources = new Set(keys.map((k) => k.split('/')[1])).size || 1;
      return keys.reduce((a, k) => a + meanOver(tail(metrics), k), 0) / sources;
    },
  },
];

console.error(
  `[experiment:kuhn] ${arms.length} arms × ${seeds.length} seeds, ${steps} steps × 72 groups × 8 hands = ${steps * 576} hands per run`,
);
const result = await runExperiment({ name: 'experiment:kuhn', arms, seeds, columns, out: values.out });
const table = markdownTable({
  title: `Kuhn poker (${seeds.length} seeds, ${steps} steps = ${steps * 576} hands each)`,
  columns: columns.map((c) => c.name),
  rows: arms.map((arm) => ({
    name: arm.name,
    values: columns.map((c) => result.runs.filter((r) => r.arm === arm.name).map((r) => r.values[c.name] as number)),
  })),
});
const perSeed = arms
  .map(
    (arm) =>
      `${arm.name}: NashConv per seed ${result.runs
        .filter((r) => r.arm === arm.name)
        .map((r) => (r.values['NashConv (last iterate)'] as number).toFixed(3))
        .join(' / ')}`,
  )
  .join('\n');
const path = await writeResults(values.out, { experiment: 'kuhn', steps, seeds, every, ...result, table });
console.log(`${table}\n\n${perSeed}\n`);
console.log(
  `${result.seconds.toFixed(0)} s in all on ${result.load.cores} cores; 1-minute load ${result.load.start[0]?.toFixed(1)} at the start, ${result.load.end[0]?.toFixed(1)} at the end; wrote ${path}`,
);
