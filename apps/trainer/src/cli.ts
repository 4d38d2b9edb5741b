#!/usr/bin/env node
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createAlgorithm } from '@troupe/prime-rl';
import { crossplay, writeCrossplay } from './crossplay.ts';
import { DEFAULT_CONFIG } from './default-config.ts';
import { emitPrimeRl } from './emit-prime-rl.ts';
import { evaluateCheckpoint } from './evaluate.ts';
import { type StepMetrics, train } from './run.ts';
import { applySet, camelKeys, parseRunConfig, RunConfigError, readRunConfigFile } from './run-config.ts';
import { serveCommand } from './serve-command.ts';

const USAGE = `usage: pnpm trainer <command>
  train [--config run.toml|run.json|'{…}'] [--set a.b=value]... [--dry-run] [--out DIR] [--seed N] [--max-steps N]
        [--time-budget SECONDS|5m|1h] [--algorithm rae|grpo|hierarchical-grpo|max-rl] [--resume]
        (--time-budget: stop at the first step boundary after it, checkpointed; schedules still span --max-steps)
        (no --config: Kuhn poker self-play, configs/kuhn-poker.toml)
        [--emit-prime-rl DIR]  (policy.engine = "external": write prime-rl's trainer.toml, inference.toml and
         launch.sh for this run config into DIR and exit; docs/scale-out.md)
  eval --checkpoint DIR [--hands N] [--seed N]     (Kuhn poker checkpoints: vs uniform, equilibrium, itself)
  crossplay --checkpoint [LABEL=]DIR [--checkpoint [LABEL=]DIR]... [--opponent uniform|equilibrium]...
        [--hands N (default 2000)] [--seed N (default 1)] [--out DIR (default runs/crossplay)]
        (every pair plays N episodes in each seat order on the same tasks: payoff matrix with 95% CIs,
         Elo by a Bradley–Terry fit, the env's evaluator per player — Kuhn: exact NashConv;
         writes DIR/crossplay.json and DIR/crossplay.html, the JSON also as stdout's last line)
  serve-inference --checkpoint DIR [--port 8000] [--host 127.0.0.1] [--model policy] [--seed N] [--max-tokens N]
        (a checkpoint or broadcasts/step_N as an OpenAI-compatible server with /pause /update_weights /resume /liveness)
  serve-trainer --output-dir DIR [--zmq host:port] [--data-world-size W] [--max-steps N] [--forever] [--no-worker-thread]
        (reads rollouts/step_N/rank_r.bin or ZMQ, trains, writes broadcasts/step_N/ + STABLE; docs/scale-out.md)
exit codes: 0 ok, 2 bad config or flag (named by field path; nothing was written), 1 internal error`;

/** `--config '{…}'`: an inline JSON run config. */
function parseInlineConfig(text: string): Record<string, unknown> {
  try {
    return camelKeys(JSON.parse(text)) as Record<string, unknown>;
  } catch (error) {
    throw new RunConfigError(`config (inline) is not valid JSON: ${(error as Error).message}`);
  }
}

/** `--time-budget`: seconds as `300`, `300s`, `5m` or `1h`; anything else is a flag error naming it. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/.exec(text.trim());
  const seconds = match ? Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'] : Number.NaN;
  if (!(seconds > 0))
    throw new RunConfigError(`--time-budget: expected seconds, or a number with s, m or h (e.g. 5m), got "${text}"`);
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
        set: { type: 'string', multiple: true, default: [] },
        'dry-run': { type: 'boolean', default: false },
        out: { type: 'string' },
        seed: { type: 'string' },
        'max-steps': { type: 'string' },
        'time-budget': { type: 'string' },
        algorithm: { type: 'string' },
        resume: { type: 'boolean', default: false },
        'emit-prime-rl': { type: 'string' },
      },
    });
    const inline = values.config?.trimStart().startsWith('{') ?? false;
    const path = values.config && !inline ? resolve(values.config) : DEFAULT_CONFIG;
    const raw = inline ? parseInlineConfig(values.config as string) : await readRunConfigFile(path);
    if (values.seed !== undefined) raw.seed = Number(values.seed);
    if (values['max-steps'] !== undefined) raw.maxSteps = Number(values['max-steps']);
    if (values['time-budget'] !== undefined) raw.maxSeconds = parseDuration(values['time-budget']);
    for (const assignment of values.set) applySet(raw, assignment);
    const config = parseRunConfig(camelKeys(raw));
    if (values.algorithm) {
      for (const i of config.train.source.keys()) applySet(raw, `train.source.${i}.algorithm.type=${values.algorithm}`);
      config.train.source.forEach((source, i) => {
        try {
          createAlgorithm({ ...source.algorithm, type: values.algorithm });
        } catch (error) {
          throw new RunConfigError(`train.source[${i}].${(error as Error).message}`);
        }
      });
    }
    if (values['dry-run']) {
      console.log(JSON.stringify(config, null, 2));
      return 0;
    }
    const out =
      values.out ??
      `runs/${config.train.source.map((s) => s.name ?? s.env.replace(/^.*\//, '').replace(/\.[mc]?[jt]s$/, '')).join('+')}`;
    if (values['emit-prime-rl'] !== undefined) {
      const written = await emitPrimeRl({ config, configPath: inline ? null : path, out, dir: values['emit-prime-rl'] });
      console.log(`wrote ${written.join(', ')}`);
      return 0;
    }
    const tty = process.stdout.isTTY;
    const loadAtStart = loadavg()[0] ?? 0;
    let lastPrint = 0;
    const result = await train({
      config: raw,
      out,
      resume: values.resume,
      baseDir: dirname(path),
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
    console.log(
      `done: ${result.steps} steps${result.steps < config.maxSteps ? ` (time budget reached; --resume continues to ${config.maxSteps})` : ''}, ${result.episodes} episodes in ${result.seconds.toFixed(0)} s (${result.trainer}); ${progressLine(result.last, config.maxSteps)}; ` +
        `1-minute load average ${loadAtStart.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end; wrote ${out}/{metrics.jsonl,report.html,checkpoint/}`,
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
  if (command === 'crossplay') {
    const { values } = parseArgs({
      args: rest,
      options: {
        checkpoint: { type: 'string', multiple: true, default: [] },
        opponent: { type: 'string', multiple: true, default: [] },
        hands: { type: 'string', default: '2000' },
        seed: { type: 'string', default: '1' },
        out: { type: 'string', default: 'runs/crossplay' },
      },
    });
    const integer = (flag: string, text: string) => {
      if (!/^-?\d+$/.test(text.trim())) throw new RunConfigError(`--${flag}: expected an integer, got ${JSON.stringify(text)}`);
      return Number(text);
    };
    const loadAtStart = loadavg()[0] ?? 0;
    const started = performance.now();
    const result = await crossplay({
      checkpoints: values.checkpoint,
      opponents: values.opponent,
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
    return 0;
  }
  if (command === 'serve-inference' || command === 'serve-trainer') return serveCommand(command, rest);
  console.error(USAGE);
  return command ? 2 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if ((error as Error).name === 'RunConfigError' || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`trainer: ${(error as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
