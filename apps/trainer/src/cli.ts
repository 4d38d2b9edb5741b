#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError, describeZodError } from '@troupe/verifiers';
import { parse as parseToml } from 'smol-toml';
import { type TrainRunConfigInput, TrainRunConfigSchema } from './config.ts';
import { evaluateCheckpoint } from './evaluate.ts';
import { type StepMetrics, train } from './loop.ts';

const USAGE = `usage: pnpm trainer <command>
  train [--config <file.json|file.toml|'{…}'>] [--out DIR] [--seed N] [--max-steps N] [--algorithm rae|grpo|hierarchical-grpo|max-rl] [--resume]
  eval --checkpoint DIR [--hands N] [--seed N]
exit codes: 0 ok, 2 bad config or flag (named by field path; nothing was written), 1 internal error`;

/** `--config`: inline JSON (`{…}`), a `.toml` file read as TOML, any other file as JSON. */
async function readTrainConfig(ref: string): Promise<Record<string, unknown>> {
  const inline = ref.trimStart().startsWith('{');
  let text = ref;
  if (!inline) {
    try {
      text = await readFile(ref, 'utf8');
    } catch (error) {
      throw new ConfigError(`cannot read config ${ref}: ${(error as Error).message}`);
    }
  }
  const format = !inline && ref.endsWith('.toml') ? 'TOML' : 'JSON';
  let value: unknown;
  try {
    value = format === 'TOML' ? structuredClone(parseToml(text)) : JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config ${inline ? '(inline)' : ref} is not valid ${format}: ${(error as Error).message}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new ConfigError('config: the top level must be an object');
  return value as Record<string, unknown>;
}

function progressLine(m: StepMetrics, maxSteps: number): string {
  const n = (k: string, d = 3) => (typeof m[k] === 'number' ? (m[k] as number).toFixed(d) : '–');
  return `step ${m.step}/${maxSteps} hands ${m.hands} NashConv ${n('nash_conv')} (avg ${n('nash_conv_average')}) p0 payoff ${n('player0_payoff')} forfeit ${n('forfeit_rate')} entropy ${n('entropy')} ${n('elapsed_s', 0)}s`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || rest.includes('--help') || rest.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
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
    const config: Record<string, unknown> = values.config ? await readTrainConfig(values.config) : {};
    if (values.seed !== undefined) config.seed = Number(values.seed);
    if (values['max-steps'] !== undefined) config.maxSteps = Number(values['max-steps']);
    if (values.algorithm) config.algorithm = { ...(config.algorithm as object), type: values.algorithm };
    // Checked before train() creates the out directory: a rejected config writes nothing.
    const checked = TrainRunConfigSchema.safeParse(config);
    if (!checked.success) throw new ConfigError(describeZodError(checked.error));
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
    if ((error as Error).name === 'ConfigError' || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`trainer: ${(error as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
