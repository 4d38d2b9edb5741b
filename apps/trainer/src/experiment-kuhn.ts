// `pnpm experiment:kuhn`: RAE vs GRPO (roles pooled) vs no baseline on Kuhn self-play, same budget,
// 3 seeds each. Prints a markdown table (final NashConv of the last iterate and of the average
// policy, forfeit rate, player-0 payoff per hand) to paste in the README.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG } from './default-config.ts';
import { readMetrics, train } from './run.ts';
import { applySet, readRunConfigFile } from './run-config.ts';

const base = await readRunConfigFile(DEFAULT_CONFIG);
const { values } = parseArgs({
  options: {
    'max-steps': { type: 'string', default: String(base.maxSteps) },
    out: { type: 'string', default: 'runs/experiment-kuhn' },
    seeds: { type: 'string', default: '0,1,2' },
  },
});
let handsPerRun = 0;
const arms: [string, string][] = [
  ['RAE (per-role EMA baseline)', '{"type":"rae","decay":0.95}'],
  ['GRPO (roles pooled)', '{"type":"grpo"}'],
  // No baseline = REINFORCE on the raw payoff (A = r): RAE whose baseline essentially never moves.
  ['No baseline (REINFORCE)', '{"type":"rae","decay":0.999999}'],
];
const seeds = values.seeds.split(',').map(Number);
const key = (k: string) => `train/kuhn-poker/${k}`;
const rows: string[] = [];
for (const [name, algorithm] of arms) {
  const finals: { nc: number; nca: number; forfeit: number; p0: number }[] = [];
  for (const seed of seeds) {
    const out = join(values.out, `${name.split(' ')[0]?.toLowerCase()}-${seed}`);
    const config = structuredClone(base);
    applySet(config, `seed=${seed}`);
    applySet(config, `max_steps=${values['max-steps']}`);
    applySet(config, `train.source.0.algorithm=${algorithm}`);
    const r = await train({ config, out });
    handsPerRun = r.episodes;
    const metrics = await readMetrics(out);
    const tail = metrics.slice(-10);
    const mean = (k: string) => tail.reduce((a, m) => a + Number(m[k] ?? 0), 0) / tail.length;
    const nc = Number(r.last['eval/kuhn-poker/nash_conv']);
    const nca = Number(r.last['eval/kuhn-poker/nash_conv_average']);
    finals.push({
      nc,
      nca,
      forfeit: mean(key('player0/metric/forfeit/mean')) + mean(key('player1/metric/forfeit/mean')),
      p0: mean(key('player0/reward/mean')),
    });
    console.log(
      `${name} seed ${seed}: NashConv ${nc.toFixed(4)} (average ${nca.toFixed(4)}), ${r.episodes} hands, ${r.seconds.toFixed(0)} s`,
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
