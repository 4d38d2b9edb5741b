import { join, resolve } from 'node:path';
import { runNode } from '../../src/testing/node-process.ts';

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
  return runNode(['--import', 'tsx', cliEntry, ...args], { cwd: repositoryRoot });
}
