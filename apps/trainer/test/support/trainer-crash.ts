import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '@troupe/verifiers/internal';

/** The app's CLI, run from its sources (the `@troupe/source` condition resolves the packages to theirs). */
const trainerCli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const appRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A tiny, deterministic Kuhn poker run (no worker thread), checkpointing every `checkpointEvery` steps. */
export function tinyTrainConfig(options: { maxSteps: number; checkpointEvery: number }): Record<string, unknown> {
  return {
    seed: 7,
    maxSteps: options.maxSteps,
    groupsPerStep: 2,
    checkpointEvery: options.checkpointEvery,
    train: {
      source: [
        {
          env: 'kuhn-poker',
          groupSize: 2,
          options: { prompts: 'pass-bet', invalidRetries: 1, deals: 'stratified' },
          algorithm: { type: 'rae', decay: 0.95 },
        },
      ],
    },
    policy: { dModel: 8, layers: 1, heads: 2, ffnMult: 1 },
    trainer: { workerThread: false, lr: 3e-3, betas: [0, 0.999], refKlTau: 0.15, refKlTauStart: 0.5 },
  };
}

/**
 * A tiny proposer-solver run as the showcase config plays it (compact format, executed claims,
 * Hierarchical GRPO, zero-advantage samples kept), checkpointing every `checkpointEvery` steps.
 */
export function tinyProposerSolverConfig(options: { maxSteps: number; checkpointEvery: number }): Record<string, unknown> {
  return {
    seed: 5,
    maxSteps: options.maxSteps,
    groupsPerStep: 3,
    checkpointEvery: options.checkpointEvery,
    filterZeroAdvantages: false,
    train: {
      evalEvery: 2,
      source: [
        {
          env: 'proposer-solver',
          groupSize: 2,
          options: { n: 4, format: 'compact', claims: 'executed' },
          algorithm: { type: 'hierarchical-grpo', episodeAgents: ['solver'] },
          roles: { proposer: { sampling: { maxTokens: 8 } }, solver: { sampling: { maxTokens: 1 } } },
        },
      ],
    },
    policy: { dModel: 8, layers: 1, heads: 2, ffnMult: 1 },
    trainer: { workerThread: false, lr: 3e-3, refKlTau: 0.05 },
  };
}

function trainer(args: string[]): {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>;
} {
  const child = spawn(process.execPath, ['--conditions=@troupe/source', '--import', 'tsx', trainerCli, 'train', ...args], {
    cwd: appRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  return { child, done: new Promise((res) => child.on('close', (code, signal) => res({ code, signal, output }))) };
}

/** What a finished run leaves: final checkpoint (step, state, tensor bytes) and metric steps. */
export interface TrainOutcome {
  step: number;
  optimizerStep: number;
  tensorsSha256: string;
  algorithm: unknown;
  metricSteps: number[];
  policyTable: string;
}

function outcome(out: string): TrainOutcome {
  const meta = JSON.parse(readFileSync(join(out, 'checkpoint/meta.json'), 'utf8')) as {
    step: number;
    optimizerStep: number;
    state: { orchestrator: { algorithms: unknown } };
  };
  return {
    step: meta.step,
    optimizerStep: meta.optimizerStep,
    tensorsSha256: createHash('sha256')
      .update(readFileSync(join(out, 'checkpoint/tensors.bin')))
      .digest('hex'),
    algorithm: meta.state.orchestrator.algorithms,
    metricSteps: readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => (JSON.parse(l) as { step: number }).step),
    policyTable: existsSync(join(out, 'policy-table.json')) ? readFileSync(join(out, 'policy-table.json'), 'utf8') : '',
  };
}

/**
 * The run reached its last step: exit 0, or 3 when some episodes failed (an untrained policy's
 * malformed proposals fail proposer-solver episodes; the run goes on and records them).
 */
const finished = (code: number | null) => code === 0 || code === 3;

/** Runs the trainer to the end without interruption. */
export async function trainUninterrupted(config: Record<string, unknown>): Promise<TrainOutcome> {
  const out = mkdtempSync(join(tmpdir(), 'troupe-train-ref-'));
  const configPath = join(out, 'config.json');
  writeFileSync(configPath, JSON.stringify(config));
  const result = await trainer(['--config', configPath, '--out', join(out, 'run')]).done;
  if (!finished(result.code)) throw new Error(`trainer failed: ${result.output.slice(-2000)}`);
  return outcome(join(out, 'run'));
}

/**
 * Runs the trainer, SIGKILLs it each time a new checkpoint lands (`kills` times, at the
 * checkpoint steps listed), resumes with `--resume` after each kill, and lets the last resume finish.
 */
export async function trainWithKills(
  config: Record<string, unknown>,
  killAtCheckpointSteps: number[],
  /** Per kill: kill once metrics.jsonl holds this many steps instead (between checkpoints); undefined = at the checkpoint. */
  killAtMetricSteps: (number | undefined)[] = [],
): Promise<{ outcome: TrainOutcome; killedAt: number[]; resumedFrom: number[] }> {
  const out = mkdtempSync(join(tmpdir(), 'troupe-train-kill-'));
  const configPath = join(out, 'config.json');
  writeFileSync(configPath, JSON.stringify(config));
  const run = join(out, 'run');
  const killedAt: number[] = [];
  const resumedFrom: number[] = [];
  for (const [k, target] of killAtCheckpointSteps.entries()) {
    const metricTarget = killAtMetricSteps[k];
    const resume = existsSync(join(run, 'checkpoint/meta.json'));
    if (resume) resumedFrom.push((JSON.parse(readFileSync(join(run, 'checkpoint/meta.json'), 'utf8')) as { step: number }).step);
    const process = trainer(['--config', configPath, '--out', run, ...(resume ? ['--resume'] : [])]);
    let exited = false;
    void process.done.then(() => (exited = true));
    const deadline = Date.now() + 240_000;
    for (;;) {
      if (exited) throw new Error(`the trainer finished before checkpoint ${target}`);
      if (Date.now() > deadline) throw new Error(`no checkpoint ${target} within 240 s`);
      const meta = join(run, 'checkpoint/meta.json');
      const metrics = join(run, 'metrics.jsonl');
      if (metricTarget !== undefined) {
        if (
          existsSync(metrics) &&
          readFileSync(metrics, 'utf8')
            .split('\n')
            .filter((l) => l.trim()).length >= metricTarget
        )
          break;
      } else if (existsSync(meta)) {
        try {
          if ((JSON.parse(readFileSync(meta, 'utf8')) as { step: number }).step >= target) break;
        } catch {
          // Being renamed into place.
        }
      }
      await sleep(5);
    }
    process.child.kill('SIGKILL');
    await process.done;
    killedAt.push((JSON.parse(readFileSync(join(run, 'checkpoint/meta.json'), 'utf8')) as { step: number }).step);
  }
  resumedFrom.push((JSON.parse(readFileSync(join(run, 'checkpoint/meta.json'), 'utf8')) as { step: number }).step);
  const final = await trainer(['--config', configPath, '--out', run, '--resume']).done;
  if (!finished(final.code)) throw new Error(`resumed trainer failed: ${final.output.slice(-2000)}`);
  return { outcome: outcome(run), killedAt, resumedFrom };
}
