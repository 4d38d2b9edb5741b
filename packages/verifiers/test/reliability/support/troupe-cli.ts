import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The repository root and the CLI entry point. */
export const repositoryRoot = resolve(import.meta.dirname, '../../../../..');
const cliEntry = join(repositoryRoot, 'packages/verifiers/src/cli/main.ts');

/** A running `troupe` process and its collected output. */
export interface CliRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/**
 * Spawns `troupe <args>` as `node --import tsx main.ts` (one process: SIGKILL kills the CLI itself,
 * unlike the tsx binary, which forks a child that survives). `env` is the whole environment.
 */
export function runCli(options: { args: string[]; env?: Record<string, string> }): CliRun {
  const env = options.env ?? {};
  const child = spawn(process.execPath, ['--import', 'tsx', cliEntry, ...options.args], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((res) =>
    child.on('close', (code, signal) => res({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

/** Complete (newline-terminated) and torn lines of a run's traces.jsonl. */
export function tracesLines(runDir: string): { complete: string[]; tornTail: boolean } {
  const path = join(runDir, 'traces.jsonl');
  if (!existsSync(path)) return { complete: [], tornTail: false };
  const text = readFileSync(path, 'utf8');
  const parts = text.split('\n');
  const tail = parts.pop() ?? '';
  return { complete: parts.filter((l) => l.trim()), tornTail: tail.length > 0 };
}

export { sleep } from '../../../src/util/timeout.ts';
