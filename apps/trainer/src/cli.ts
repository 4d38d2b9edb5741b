#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type TrainRunConfigInput, TrainRunConfigSchema } from './config.ts';
import { evaluateCheckpoint } from './evaluate.ts';
import { type StepMetrics, train } from './loop.ts';

const USAGE = `usage: pnpm trainer <command>
  train [--config <file.json>] [--out DIR] [--seed N] [--max-steps N] [--algorithm rae|grpo|hierarchical-grpo|max-rl] [--resume]
  eval --checkpoint DIR [--hands N] [--seed N]`;

function progressLine(m: StepMetrics, maxSteps: number): string {
  const n = (k: string, d = 3) => (typeof m[k] === 'number' ? (m[k] as number).toFixed(d) : '–');
  return `step ${m.step}/${maxSteps} hands ${m.hands} NashConv ${n('nash_conv')} (avg ${n('nash_conv_average')}) p0 payoff ${n('player0_payoff')} forfeit ${n('forfeit_rate')} entropy ${n('entropy')} ${n('elapsed_s', 0)}s`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'train') {
    const { values } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string' },
        out: { type: 'string', default: 'runs/kuhn' },
        seed: { type: 'string' },
        'max-steps': { type: 'string' },
        algorithm: { type: 'string' },
        resume: { type: 'boolean', default: false },
      },
    });
    const config: Record<string, unknown> = values.config
      ? (JSON.parse(await readFile(values.config, 'utf8')) as Record<string, unknown>)
      : {};
    if (values.seed !== undefined) config.seed = Number(values.seed);
    if (values['max-steps'] !== undefined) config.maxSteps = Number(values['max-steps']);
    if (values.algorithm) config.algorithm = { ...(config.algorithm as object), type: values.algorithm };
    const tty = process.stdout.isTTY;
    const loadAtStart = loadavg()[0] ?? 0;
    const maxSteps = Number(config.maxSteps ?? TrainRunConfigSchema.parse({}).maxSteps);
    let lastPrint = 0;
    const result = await train({
      config: config as TrainRunConfigInput,
      out: values.out,
      resume: values.resume,
      log: (line) => console.log(line),
      onStep: (m) => {
        if (tty) {
          const width = 24;
          const done = Math.round((Number(m.step) / maxSteps) * width);
          process.stdout.write(`\r[${'#'.repeat(done)}${'.'.repeat(width - done)}] ${progressLine(m, maxSteps)}   `);
        } else if (Date.now() - lastPrint > 10_000 || m.step === maxSteps) {
          lastPrint = Date.now();
          console.log(progressLine(m, maxSteps));
        }
      },
    });
    if (tty) process.stdout.write('\n');
    console.log(
      `done: ${result.steps} steps, ${result.hands} hands played in ${result.seconds.toFixed(0)} s; NashConv ${result.nashConv.toFixed(4)} (average policy ${result.nashConvAverage.toFixed(4)}); ` +
        `1-minute load average ${loadAtStart.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end; ` +
        `wrote ${values.out}/{metrics.jsonl,policy-table.json,policy-table-average.json,report.html,checkpoint/}`,
    );
    return 0;
  }
  if (command === 'eval') {
    const { values } = parseArgs({
      args: rest,
      options: {
        checkpoint: { type: 'string' },
        hands: { type: 'string', default: '4000' },
        seed: { type: 'string', default: '1' },
      },
    });
    if (!values.checkpoint) {
      console.error(USAGE);
      return 2;
    }
    const report = await evaluateCheckpoint({
      checkpoint: values.checkpoint,
      hands: Number(values.hands),
      seed: Number(values.seed),
    });
    for (const r of report) {
      console.log(
        `vs ${r.opponent.padEnd(12)} as player0 ${r.asPlayer0.mean.toFixed(3)} ± ${r.asPlayer0.ci95.toFixed(3)}   as player1 ${r.asPlayer1.mean.toFixed(3)} ± ${r.asPlayer1.ci95.toFixed(3)}   forfeits ${r.forfeitRate.toFixed(3)}  (${r.hands} hands per seat)`,
      );
    }
    console.log(JSON.stringify(report));
    return 0;
  }
  console.error(USAGE);
  return command ? 2 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
