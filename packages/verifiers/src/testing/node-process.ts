import { spawn } from 'node:child_process';

/** What a finished child process printed, and its exit code (null when a signal ended it). */
export interface NodeProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <args>` (the Node binary running the tests, e.g. `['--import', 'tsx', entry, …]`) in
 * `cwd` with stdin closed and only PATH and HOME in its environment (or `env` when given), and
 * resolves once it has exited, with its exit code and all it printed on stdout and stderr.
 */
export function runNode(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<NodeProcessResult> {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: options.env ?? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })));
}
