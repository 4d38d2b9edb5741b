#!/usr/bin/env node
// The @troupe/trainer bin (`troupe train` and the other trainer commands run it): the CLI runs with
// the V8 flags `pnpm trainer` uses (a larger young generation and no allocation-site pretenuring:
// self-play's many short-lived hands then die young; see apps/trainer/bench/inference.bench.ts).
// When this process lacks them it runs the CLI in a child that has them, passing stdio, signals
// and the exit code through.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const FLAGS = ['--max-semi-space-size=64', '--no-allocation-site-pretenuring'];
const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

if (FLAGS.every((flag) => process.execArgv.includes(flag))) {
  await import(cli);
} else {
  const child = spawn(process.execPath, [...process.execArgv, ...FLAGS, cli, ...process.argv.slice(2)], { stdio: 'inherit' });
  // A terminal's Ctrl-C reaches the child too (same process group); a signal sent to this process alone is passed on.
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('exit', (code, signal) => {
    process.exitCode = code ?? (signal === 'SIGINT' ? 130 : 128 + 15);
  });
}
