// `troupe train` as a user runs it: the trainer CLI from its sources (tsx) in a child process, to its
// end or killed with SIGKILL once a checkpoint is committed; and the TOML of a two-seat run.
import { spawn } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { type NodeProcessResult, runNode } from '@troupe/verifiers/testing';

const cli = resolve(import.meta.dirname, '../cli.ts');
const app = resolve(import.meta.dirname, '../..');
const node = ['--conditions=@troupe/source', '--import', 'tsx', cli];

/** `troupe <args>` (e.g. `['train', '--config', …]`) run in the trainer app's folder; resolves when it ends. */
export function troupeCli(args: string[]): Promise<NodeProcessResult> {
  return runNode([...node, ...args], { cwd: app });
}

/**
 * `troupe train <args>` killed with SIGKILL, with no chance to clean up, as soon as `<out>/checkpoint`
 * names the checkpoint of `step`; resolves with the signal it ended by (null: it exited first) and its stderr.
 */
export function trainKilledAtCheckpoint(options: {
  args: string[];
  out: string;
  step: number;
}): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [...node, 'train', ...options.args], {
    cwd: app,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const pointer = resolve(options.out, 'checkpoint');
  const poll = setInterval(() => {
    if (existsSync(pointer) && readlinkSync(pointer) === `checkpoints/step-${options.step}` && !child.killed)
      child.kill('SIGKILL');
  }, 5);
  return new Promise((done) =>
    child.on('close', (_code, signal) => {
      clearInterval(poll);
      done({ signal, stderr });
    }),
  );
}

/**
 * The TOML of a run of `env` (a two-seat env module, absolute) with seat `left` on policy `left`
 * and `right` on `right`: 6 steps of 4 groups of 4, lr 0.05, then `rest` (the policies' tables).
 */
export function twoSeatToml(options: { env: string; left: string; right: string; checkpointEvery: number; rest: string }): string {
  return `seed = 1
max_steps = 6
groups_per_step = 4
checkpoint_every = ${options.checkpointEvery}
filter_zero_advantages = false
[[train.source]]
env = ${JSON.stringify(options.env)}
group_size = 4
[train.source.roles.left]
policy = "${options.left}"
[train.source.roles.right]
policy = "${options.right}"
[trainer]
lr = 0.05
${options.rest}`;
}
