// Runs of two external policies (`west` plays the two-sides env's left seat, `east` its right)
// against prime-rl's trainer double (tooling/prime-rl-double, rebuilt from prime-rl's source) and
// vLLM-shaped servers: the config, the trainers as torchrun would start them, and what they decoded.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ScriptedModelServer, type ScriptFunction } from '@troupe/verifiers/testing';
import { afterAll, it } from 'vitest';
import { primeRlLaunch } from '../emit-prime-rl.ts';
import { camelKeys, parseRunConfig } from '../run-config.ts';
import { tempDirs } from './temp-dirs.ts';

const PYTHON = '/usr/bin/python3';
const DOUBLE = resolve(import.meta.dirname, '../../../../tooling/prime-rl-double');
const ready = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;

// Tests run the double when python3 with msgpack is here, and under CI, where a missing double is a
// failure, not a skip (.ci/run installs python3-msgpack).
const runs = ready || process.env.CI === 'true';

/**
 * A test file of runs with trainer doubles: `runIt` is `it` (`it.skip` without python3 and msgpack),
 * `trainers` starts the doubles and `tempDir` makes folders named `prefix…`; after the suite the
 * doubles still running are stopped and the folders removed.
 */
export function trainerDoubleSuite(prefix: string): {
  runIt: (name: string, fn: () => Promise<void>, timeoutMs?: number) => void;
  trainers: TrainerDoubles;
  tempDir: () => Promise<string>;
} {
  return {
    runIt: (name, fn, timeoutMs) => (runs ? it : it.skip)(name, fn, timeoutMs),
    trainers: new TrainerDoubles(),
    tempDir: tempDirs(prefix),
  };
}

/** The two-sides env, absolute (a run config the CLI reads from a temporary folder finds it). */
export const TWO_SIDES_ENV = resolve(import.meta.dirname, 'two-sides-env.ts');

/** The two-sides env whose `left` seat sits out task 1 (its policy lags a step from step 2 on). */
export const LEFT_RESTS_ENV = resolve(import.meta.dirname, 'two-sides-left-rests-env.ts');

/** Where policy `name`'s trainer reads rollouts and writes broadcasts and checkpoints. */
export const wireDir = (dir: string, name: string) => join(dir, `wire-${name}`);

/** The broadcast directory of policy `name`'s trainer step `step`. */
export const broadcastDir = (dir: string, name: string, step: number) => join(wireDir(dir, name), 'broadcasts', `step_${step}`);

/**
 * A raw run config (snake_case, as a TOML file reads): the two-sides env with seat `left` on policy
 * `west` and `right` on `east`, each policy external with its own files transport in
 * `<dir>/wire-<name>` and the `[inference]` that `inference(name)` gives. `env` replaces the env
 * module, `run` overrides top-level keys.
 */
export function twoExternalPolicies(options: {
  dir: string;
  steps: number;
  env?: string;
  inference: (name: string) => Record<string, unknown>;
  run?: Record<string, unknown>;
}): Record<string, unknown> {
  const policy = (name: string) => ({
    engine: 'external',
    max_tokens: 1,
    transport: { type: 'filesystem', output_dir: wireDir(options.dir, name) },
    inference: { start_timeout_seconds: 30, ...options.inference(name) },
  });
  return {
    seed: 0,
    max_steps: options.steps,
    groups_per_step: 2,
    max_async: 0,
    checkpoint_every: options.steps,
    filter_zero_advantages: false,
    train: {
      source: [{ env: options.env ?? TWO_SIDES_ENV, group_size: 4, roles: { left: { policy: 'west' }, right: { policy: 'east' } } }],
    },
    policies: { west: policy('west'), east: policy('east') },
    ...options.run,
  };
}

/**
 * The model behind the vLLM-shaped servers, answering with vLLM's token ids: by default "left" on
 * every third call and "right" otherwise, so each seat's group holds both rewards.
 */
export function twoSidesModel(
  script: ScriptFunction = (_request, { callIndex }) => (callIndex % 3 === 0 ? 'left' : 'right'),
): Promise<ScriptedModelServer> {
  return ScriptedModelServer.start({ vllmTokens: true, keepLog: false, script });
}

/** One trainer double: its `trainer.toml` (as `--emit-prime-rl` writes it), its exit code once it ends. */
export interface TrainerDouble {
  trainerToml: string;
  inferenceToml: string;
  child: ChildProcess;
  exit: Promise<number | null>;
}

/**
 * Starts and remembers trainer doubles; `stderr` holds what they all wrote there, and `stop` ends
 * the ones still running (the constructor registers it with `afterAll`).
 */
export class TrainerDoubles {
  constructor() {
    afterAll(() => this.stop());
  }

  private readonly children: ChildProcess[] = [];
  stderr = '';

  /**
   * Starts policy `policy`'s trainer as `launch.sh` does (`torchrun --nproc-per-node 1 … @ trainer.toml`,
   * `--resume.step N` when resuming), on the trainer.toml `primeRlLaunch` writes for the run `raw`.
   */
  async start(options: { dir: string; raw: Record<string, unknown>; policy: string; resumeStep?: number }): Promise<TrainerDouble> {
    const { dir, policy } = options;
    const launch = primeRlLaunch({
      config: parseRunConfig(camelKeys(options.raw)),
      policy,
      configPath: null,
      out: join(dir, 'run'),
    });
    const toml = join(dir, `${policy}.toml`);
    await writeFile(toml, launch['trainer.toml']);
    const resume = options.resumeStep === undefined ? [] : ['--resume.step', String(options.resumeStep)];
    const child = spawn(
      PYTHON,
      [join(DOUBLE, 'torchrun.py'), '--nproc-per-node', '1', join(DOUBLE, 'trainer.py'), '@', toml, ...resume],
      // Its own process group: `stop` reaches the rank processes too (a SIGKILL of torchrun alone would orphan them).
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    this.children.push(child);
    child.stderr?.on('data', (d) => (this.stderr += d));
    const exit = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    return { trainerToml: launch['trainer.toml'], inferenceToml: launch['inference.toml'], child, exit };
  }

  /** Sends `signal` to every trainer still running (torchrun and its ranks) and waits for each to end. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const running = this.children.filter((child) => child.exitCode === null && child.signalCode === null);
    const ended = running.map((child) => new Promise((done) => child.once('close', done)));
    for (const child of running) if (child.pid !== undefined) process.kill(-child.pid, signal);
    await Promise.all(ended);
  }
}

/** One step as policy `name`'s trainer double decoded it (`trainer-double/rank_0.jsonl`). */
export interface DecodedStep {
  step: number;
  loss_tokens: number;
  resumed_from: number | null;
}

/** Every step policy `name`'s trainer double decoded, in order. */
export async function decodedSteps(dir: string, name: string): Promise<DecodedStep[]> {
  return (await readFile(join(wireDir(dir, name), 'trainer-double', 'rank_0.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as DecodedStep);
}
