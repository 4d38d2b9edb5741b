#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { createAlgorithm } from '@troupe/prime-rl';
import { ConfigError, setPluginSearchPaths } from '@troupe/verifiers';
import { crossplay, writeCrossplay } from './crossplay.ts';
import { DEFAULT_CONFIG } from './default-config.ts';
import { emitPrimeRl } from './emit-prime-rl.ts';
import { type StepMetrics, train } from './run.ts';
import { applySet, camelKeys, parseRunConfig, type RunConfig, readRunConfigFile } from './run-config.ts';
import { serveCommand } from './serve-command.ts';

/** The default run config as its help names it (`configs/<name>.toml`). */
const DEFAULT_NAME = `${basename(dirname(DEFAULT_CONFIG))}/${basename(DEFAULT_CONFIG)}`;

/** The text of `troupe train --help` (and of every trainer command's `--help`): the layout of `troupe --help`. */
const HELP = `troupe train — train a policy on envs, play and serve its checkpoints (package @troupe/trainer)

Usage:
  troupe train [options]           train the embedded policy on a run config (default: ${DEFAULT_NAME})
  troupe crossplay --checkpoint [LABEL=]DIR[#POLICY] [--checkpoint [LABEL=]DIR[#POLICY]]... [--opponent NAME]...
                   [--hands N (default 2000)] [--seed N (default 1)] [--out DIR (default runs/crossplay)]
                                   every pair plays N episodes in each seat order on the same tasks: payoff
                                   matrix with 95% CIs, Elo (Bradley–Terry), the env's evaluator per player;
                                   DIR#POLICY: one policy of a checkpoint of several (pits a run's policies);
                                   --opponent: a fixed opponent the env declares (default with one
                                   checkpoint: all of them);
                                   writes DIR/crossplay.json and DIR/crossplay.html (the JSON also on stdout)
  troupe serve-inference --checkpoint DIR [--port 8000] [--host 127.0.0.1] [--model policy] [--seed N] [--max-tokens N]
                                   a checkpoint as an OpenAI-compatible server (/pause /update_weights /resume)
  troupe serve-trainer --output-dir DIR [--zmq host:port] [--data-world-size W] [--max-steps N] [--forever]
                       [--no-worker-thread]
                                   reads rollouts/step_N/rank_r.bin or ZMQ, trains, writes broadcasts/step_N/
  (the same commands: troupe-trainer <command>, and pnpm trainer <command> in the troupe repository)

Train options:
  -f, --config FILE|JSON  run config: a .toml or .json file, or inline JSON '{…}' (default: the package's
                          ${DEFAULT_NAME}); env module paths are relative to the file
  -s, --set PATH=VALUE    set any config field, e.g. --set policy.d_model=64 (repeatable)
      --run-dir DIR       write the run to DIR (alias --out; default runs/<source names>)
      --resume            continue the run in --run-dir from its checkpoint (this config's max_steps);
                          policy.engine = "external": prime-rl's trainer resumes from its checkpoint
                          of the same step (launch.sh --resume), else exit 2 naming both steps
      --clean             replace the run in --run-dir (refused with --resume)
      --seed N            run seed
      --max-steps N       training steps
      --time-budget T     seconds, or 5m / 1h: stop at the first step boundary after it, checkpointed;
                          schedules still span --max-steps (--resume continues)
      --algorithm NAME    rae | grpo | hierarchical-grpo | max-rl | sft (each task's answer), for every source
      --dry-run           print the resolved config; create nothing
      --emit-prime-rl DIR policy.engine = "external": write prime-rl's trainer.toml, inference.toml and
                          launch.sh for this run config into DIR and exit (docs/scale-out.md); with
                          external [policies.<name>]: DIR/<name>/trainer.toml and inference.toml each
  -h, --help

Exit codes:
  0  ok                                          2  bad config or flag (nothing was written)
  3  some episodes failed (the run finished)     4  stopped: every episode failed in the first step
  1  an internal error                              or in stop_after_failed_steps (default 5) steps
  130 interrupted (--resume continues from          in a row (the error and endpoints are named), or
      the last checkpoint)                          10 batches in a row had no sample (every advantage
                                                    0); the last checkpoint is kept
`;

/** Exit codes of the trainer's commands (as `troupe eval`'s, documented in {@link HELP}). */
const EXIT_CODES = { ok: 0, internal: 1, config: 2, someFailed: 3, stopped: 4, interrupted: 130 } as const;

/** A second SIGINT / SIGTERM stops at once only when it comes this long after the first (copies of one press arrive together). */
const SIGNAL_REPEAT_MS = 1000;

/** `--config '{…}'`: an inline JSON run config. */
function parseInlineConfig(text: string): Record<string, unknown> {
  try {
    return camelKeys(JSON.parse(text)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`config (inline) is not valid JSON: ${(error as Error).message}`);
  }
}

/** `--time-budget`: seconds as `300`, `300s`, `5m` or `1h`; anything else is a flag error naming it. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/.exec(text.trim());
  const seconds = match ? Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'] : Number.NaN;
  if (!(seconds > 0))
    throw new ConfigError(`--time-budget: expected seconds, or a number with s, m or h (e.g. 5m), got "${text}"`);
  return seconds;
}

/** The progress line: step, episodes, each source's reward per role and every evaluator metric. */
function progressLine(m: StepMetrics, maxSteps: number): string {
  const parts = [`step ${m.step}/${maxSteps}`, `episodes ${m.episodes}`];
  for (const [k, v] of Object.entries(m)) {
    if (typeof v !== 'number') continue;
    if (/^train\/[^/]+\/[^/]+\/reward\/mean$/.test(k)) parts.push(`${k.slice(6, -12)} reward ${v.toFixed(3)}`);
    else if (k.startsWith('eval/') && !k.includes('/probe/')) parts.push(`${k.slice(5)} ${v.toFixed(3)}`);
  }
  if (typeof m['time/elapsed'] === 'number') parts.push(`${m['time/elapsed'].toFixed(0)}s`);
  return parts.join('  ');
}

/** The train flags: one vocabulary with `troupe eval` (`--config`/`-f`, `--run-dir`/`--out`, `--resume`, `--clean`, `--set`/`-s`). */
const TRAIN_OPTIONS = {
  config: { type: 'string', short: 'f' },
  set: { type: 'string', short: 's', multiple: true, default: [] as string[] },
  'dry-run': { type: 'boolean', default: false },
  'run-dir': { type: 'string' },
  out: { type: 'string' },
  seed: { type: 'string' },
  'max-steps': { type: 'string' },
  'time-budget': { type: 'string' },
  algorithm: { type: 'string' },
  'emit-prime-rl': { type: 'string' },
  resume: { type: 'boolean', default: false },
  clean: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

/** Reads `--config` (a file, or inline JSON) with the flag overrides applied: the raw config and the directory env paths are relative to. */
async function readTrainConfig(values: {
  config?: string | undefined;
  seed?: string | undefined;
  'max-steps'?: string | undefined;
  'time-budget'?: string | undefined;
  set: string[];
}): Promise<{ raw: Record<string, unknown>; baseDir: string; configPath: string | null }> {
  const inline = values.config?.trimStart().startsWith('{') ?? false;
  const path = values.config && !inline ? resolve(values.config) : DEFAULT_CONFIG;
  if (!inline && !existsSync(path)) throw new ConfigError(`--config: file ${path} does not exist`);
  const raw = inline ? parseInlineConfig(values.config as string) : await readRunConfigFile(path);
  const integer = (flag: string, text: string) => {
    if (!/^\d+$/.test(text.trim())) throw new ConfigError(`--${flag}: expected a whole number, got ${JSON.stringify(text)}`);
    return Number(text);
  };
  if (values.seed !== undefined) raw.seed = integer('seed', values.seed);
  if (values['max-steps'] !== undefined) raw.maxSteps = integer('max-steps', values['max-steps']);
  if (values['time-budget'] !== undefined) raw.maxSeconds = parseDuration(values['time-budget']);
  for (const assignment of values.set) applySet(raw, assignment);
  // Inline JSON and the default config: module paths are relative to the working directory.
  const configPath = values.config && !inline ? path : null;
  return { raw, baseDir: configPath ? dirname(configPath) : process.cwd(), configPath };
}

/** `--algorithm NAME`: the algorithm of every train source, checked by name. */
function applyAlgorithm(raw: Record<string, unknown>, config: RunConfig, algorithm: string): void {
  for (const i of config.train.source.keys()) applySet(raw, `train.source.${i}.algorithm.type=${algorithm}`);
  config.train.source.forEach((source, i) => {
    try {
      createAlgorithm({ ...source.algorithm, type: algorithm });
    } catch (error) {
      throw new ConfigError(`train.source[${i}].${(error as Error).message}`);
    }
  });
}

/** `troupe train`: exit 0 ok, 3 some episodes failed, 4 stopped (every episode failing), 130 interrupted; 2 for a bad config. */
async function trainCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: TRAIN_OPTIONS, allowPositionals: false });
  if (values.help) {
    process.stdout.write(HELP);
    return EXIT_CODES.ok;
  }
  if (values.out !== undefined && values['run-dir'] !== undefined && values.out !== values['run-dir'])
    throw new ConfigError('--out and --run-dir name the same folder; give one');
  const { raw, baseDir, configPath } = await readTrainConfig(values);
  const config = parseRunConfig(camelKeys(raw));
  if (values.algorithm) applyAlgorithm(raw, config, values.algorithm);
  if (values['dry-run']) {
    console.log(JSON.stringify(parseRunConfig(camelKeys(raw)), null, 2));
    return EXIT_CODES.ok;
  }
  const out =
    values['run-dir'] ??
    values.out ??
    `runs/${config.train.source.map((s) => s.name ?? s.env.replace(/^.*\//, '').replace(/\.[mc]?[jt]s$/, '')).join('+')}`;
  if (values['emit-prime-rl'] !== undefined) {
    const written = await emitPrimeRl({ config, configPath, out, dir: values['emit-prime-rl'] });
    console.log(`wrote ${written.join(', ')}`);
    return EXIT_CODES.ok;
  }
  const interrupt = new AbortController();
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    // A terminal's Ctrl-C reaches every process of the group, and the `troupe` and `troupe-trainer`
    // bins pass it on as well: copies within a second are that one press, not a second one.
    if (interrupt.signal.aborted) {
      if (Date.now() - firstSignalAt > SIGNAL_REPEAT_MS) process.exit(EXIT_CODES.interrupted);
      return;
    }
    firstSignalAt = Date.now();
    console.error(`\n${signal}: stopping at the end of this step (again to stop now; --resume continues)`);
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await runTraining({ raw, baseDir, out, config, resume: values.resume, clean: values.clean, signal: interrupt.signal });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Runs `train` with progress lines; prints the closing line (naming only the files written) and returns the exit code. */
async function runTraining(options: {
  raw: Record<string, unknown>;
  baseDir: string;
  out: string;
  config: RunConfig;
  resume: boolean;
  clean: boolean;
  signal: AbortSignal;
}): Promise<number> {
  const { config, out } = options;
  const tty = process.stdout.isTTY;
  const loadAtStart = loadavg()[0] ?? 0;
  let lastPrint = 0;
  const result = await train({
    config: options.raw,
    out,
    resume: options.resume,
    clean: options.clean,
    signal: options.signal,
    baseDir: options.baseDir,
    log: (line) => console.error(line),
    onStep: (m) => {
      if (tty) process.stdout.write(`\r${progressLine(m, config.maxSteps)}   `);
      else if (Date.now() - lastPrint > 10_000 || m.step === config.maxSteps) {
        lastPrint = Date.now();
        console.log(progressLine(m, config.maxSteps));
      }
    },
  });
  if (tty) process.stdout.write('\n');
  const wrote = ['metrics.jsonl', 'report.html', ...(result.checkpoint ? ['checkpoint/'] : [])];
  const failed =
    result.failedEpisodes > 0 ? `; ${result.failedEpisodes} episode(s) failed (their errors: troupe view ${out})` : '';
  console.log(
    `done: ${result.steps} steps${result.steps < config.maxSteps ? ` (time budget reached; --resume continues to ${config.maxSteps})` : ''}, ${result.episodes} episodes in ${result.seconds.toFixed(0)} s (${result.trainer}); ${progressLine(result.last, config.maxSteps)}; ` +
      `1-minute load average ${loadAtStart.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end; wrote ${out}/{${wrote.join(',')}}${result.checkpoint ? '' : ' (no checkpoint: checkpoint_every = 0)'}${failed}`,
  );
  return result.failedEpisodes > 0 ? EXIT_CODES.someFailed : EXIT_CODES.ok;
}

/** `troupe crossplay`: every pair of checkpoints (and fixed opponents) against each other. */
async function crossplayCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      checkpoint: { type: 'string', multiple: true, default: [] },
      opponent: { type: 'string', multiple: true, default: [] },
      hands: { type: 'string', default: '2000' },
      seed: { type: 'string', default: '1' },
      out: { type: 'string', default: 'runs/crossplay' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return EXIT_CODES.ok;
  }
  const integer = (flag: string, text: string) => {
    if (!/^-?\d+$/.test(text.trim())) throw new ConfigError(`--${flag}: expected an integer, got ${JSON.stringify(text)}`);
    return Number(text);
  };
  const loadAtStart = loadavg()[0] ?? 0;
  const started = performance.now();
  const result = await crossplay({
    checkpoints: values.checkpoint,
    ...(values.opponent.length ? { opponents: values.opponent } : {}),
    hands: integer('hands', values.hands),
    seed: integer('seed', values.seed),
    log: (line) => console.error(line),
  });
  const files = await writeCrossplay({ out: values.out, result });
  const width = Math.max(...result.players.map((p) => p.label.length), 8);
  console.log(`payoff per episode of the row player (±95% CI), ${result.hands} episodes per pair and seat order:`);
  console.log(`${''.padEnd(width)}  ${result.players.map((p) => p.label.padStart(16)).join('')}`);
  result.players.forEach((p, i) => {
    const cells = (result.payoff[i] ?? []).map((c) => (c ? `${c.mean.toFixed(3)} ± ${c.ci95.toFixed(3)}` : '—').padStart(16));
    console.log(`${p.label.padEnd(width)}  ${cells.join('')}`);
  });
  for (const p of [...result.players].sort((a, b) => b.elo - a.elo)) {
    const metrics = Object.entries(p.evaluation).map(([k, v]) => `${k} ${v.toFixed(4)}`);
    console.log(`${p.label.padEnd(width)}  Elo ${p.elo.toFixed(0)}  ${metrics.join('  ')}`);
  }
  console.error(
    `crossplay: ${((performance.now() - started) / 1000).toFixed(1)} s; 1-minute load average ${loadAtStart.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end; wrote ${files.join(', ')}`,
  );
  console.log(JSON.stringify({ ...result, files }));
  return EXIT_CODES.ok;
}

/** The trainer's commands by name (the table `troupe` dispatches from). */
const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  train: trainCommand,
  crossplay: crossplayCommand,
  'serve-inference': (args) => serveCommand('serve-inference', args),
  'serve-trainer': (args) => serveCommand('serve-trainer', args),
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Env, harness and runtime packages resolve from the user's project, then from this package's
  // own dependencies (the default run config's env is one).
  setPluginSearchPaths([process.cwd(), dirname(fileURLToPath(import.meta.url))]);
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(HELP);
    return EXIT_CODES.ok;
  }
  const run = COMMANDS[command];
  if (run) {
    if (rest.includes('--help') || rest.includes('-h')) {
      process.stdout.write(HELP);
      return EXIT_CODES.ok;
    }
    return run(rest);
  }
  // `troupe trian` never gets here (the core's bin names the closest command); this bin lists its few.
  process.stderr.write(
    `troupe: unknown command ${JSON.stringify(command)} (the trainer's: ${Object.keys(COMMANDS).join(', ')})\n\n${HELP}`,
  );
  return EXIT_CODES.config;
}

/** The error as the user reads it: the message, and the stack of their own code when it caused it. */
function describeError(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error && cause.stack ? `${error.message}\n  caused by ${cause.stack}` : error.message;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: Error) => {
    const code = (error as { code?: string }).code;
    if (error.name === 'ConfigError' || code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`troupe: ${describeError(error)}\n(see troupe train --help; nothing was written)\n`);
      process.exitCode = EXIT_CODES.config;
    } else if (error.name === 'ResumeStepMismatchError') {
      process.stderr.write(
        `troupe: ${error.name}: ${error.message}\n(the checkpoint is kept; --resume again once both sides are at one step)\n`,
      );
      process.exitCode = EXIT_CODES.config;
    } else if (error.name === 'TrainingStoppedError' || error.name === 'EmptyBatchesError') {
      process.stderr.write(`troupe: ${error.name}: ${error.message}\n(metrics and the last checkpoint, if any, are kept)\n`);
      process.exitCode = EXIT_CODES.stopped;
    } else if (error.name === 'TrainingInterruptedError') {
      process.stderr.write(`troupe: ${error.message}\n`);
      process.exitCode = EXIT_CODES.interrupted;
    } else {
      process.stderr.write(`troupe: ${error.stack ?? String(error)}\n`);
      process.exitCode = EXIT_CODES.internal;
    }
  },
);
