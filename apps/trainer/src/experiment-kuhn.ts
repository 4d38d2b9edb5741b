// `pnpm experiment:kuhn`: RAE vs GRPO (roles pooled) vs no baseline on Kuhn self-play, same budget,
// 3 seeds each. Prints a markdown table (final NashConv of the last iterate and of the average
// policy, forfeit rate, player-0 payoff per hand) to paste in the README.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type TrainRunConfigInput, TrainRunConfigSchema } from './config.ts';
import { readMetrics, train } from './loop.ts';

const defaults = TrainRunConfigSchema.parse({});
const { values } = parseArgs({
  options: {
    'max-steps': { type: 'string', default: String(defaults.maxSteps) },
    out: { type: 'string', default: 'runs/experiment-kuhn' },
    seeds: { type: 'string', default: '0,1,2' },
  },
});
let handsPerRun = 0;
const arms: [string, TrainRunConfigInput['algorithm']][] = [
  ['RAE (per-role EMA baseline)', { type: 'rae', decay: 0.95 } as never],
  ['GRPO (roles pooled)', { type: 'grpo' } as never],
  // No baseline = REINFORCE on the raw payoff (A = r): RAE whose baseline starts at 0 and
  // essentially never moves (decay 0.999999; decay 1 is refused by the RAE config).
  ['No baseline (REINFORCE)', { type: 'rae', decay: 0.999999 } as never],
];
const seeds = values.seeds.split(',').map(Number);
const rows: string[] = [];
for (const [name, algorithm] of arms) {
  const finals: { nc: number; nca: number; forfeit: number; p0: number }[] = [];
  for (const seed of seeds) {
    const out = join(values.out, `${name.split(' ')[0]?.toLowerCase()}-${seed}`);
    const r = await train({ config: { seed, maxSteps: Number(values['max-steps']), algorithm }, out });
    handsPerRun = r.hands;
    const metrics = await readMetrics(out);
    const tail = metrics.slice(-10);
    const mean = (k: string) => tail.reduce((a, m) => a + Number(m[k] ?? 0), 0) / tail.length;
    finals.push({ nc: r.nashConv, nca: r.nashConvAverage, forfeit: mean('forfeit_rate'), p0: mean('player0_payoff') });
    console.log(
      `${name} seed ${seed}: NashConv ${r.nashConv.toFixed(4)} (average ${r.nashConvAverage.toFixed(4)}), ${r.hands} hands, ${r.seconds.toFixed(0)} s`,
    );
  }
  const m = (f: (x: (typeof finals)[number]) => number) => {
    const xs = finals.map(f);
    const mu = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mu) ** 2, 0) / Math.max(xs.length - 1, 1));
    return `${mu.toFixed(3)} ± ${sd.toFixed(3)}`;
  };
  rows.push(`| ${name} | ${m((x) => x.nc)} | ${m((x) => x.nca)} | ${m((x) => x.forfeit)} | ${m((x) => x.p0)} |`);
}
console.log(
  `\n| Algorithm (${seeds.length} seeds, ${values['max-steps']} steps = ${handsPerRun} hands each) | NashConv (last iterate) | NashConv (average policy) | Forfeit rate | Player-0 payoff / hand |\n|---|---|---|---|---|\n${rows.join('\n')}`,
);
