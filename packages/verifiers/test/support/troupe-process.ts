import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

/** The repository root (the CLI runs with it as its working directory). */
export const repositoryRoot = resolve(import.meta.dirname, '../../../..');
const cliEntry = join(repositoryRoot, 'packages/verifiers/src/cli/main.ts');

/** What a finished `troupe` process printed and its exit code. */
export interface TroupeResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `troupe <args>` from sources (`node --import tsx main.ts`, the source export condition
 * inherited through NODE_OPTIONS) with only PATH and HOME in its environment, and resolves once
 * it has exited.
 */
export function troupe(args: string[]): Promise<TroupeResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', cliEntry, ...args], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })));
}
