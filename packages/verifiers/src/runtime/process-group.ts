import { type ChildProcess, spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Writable } from 'node:stream';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { BoundedOutput } from './bounded-output.ts';
import type { ExecResult } from './runtime.ts';
import { DEFAULT_MAX_OUTPUT_BYTES } from './runtime-options.ts';

/** What {@link runProcessGroup} needs to start one program in its own process group. */
export interface ProcessGroupRun {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: string | Uint8Array;
  timeoutMs?: number;
  signal?: AbortSignal;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  /** Bytes kept per stream; the rest is dropped and `truncated` set (default 64 MiB). */
  maxOutputBytes?: number;
  /** How long to wait for stdout/stderr to close after the program exited (a background child may hold them). */
  closeGraceMs?: number;
  /** Called with the process group id as soon as the program started (to kill it later). */
  onStart?: (processGroupId: number) => void;
}

/** Sends `signal` to every process of the group; false when the group no longer exists. */
export function killProcessGroup(processGroupId: number, signal: NodeJS.Signals | 0 = 'SIGKILL'): boolean {
  try {
    process.kill(-processGroupId, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a process with this pid exists on this host (signal 0; a process of another user
 * counts). Sandbox sweeps use it to find sandboxes whose owning process is gone.
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The exec result once the program is over (`durationMs` since `started`, from `performance.now()`). */
function execResultOf(end: {
  exitCode: number | null;
  stdout: BoundedOutput;
  stderr: BoundedOutput;
  timedOut: boolean;
  started: number;
}): ExecResult {
  const result: ExecResult = {
    exitCode: end.exitCode ?? 1,
    stdout: end.stdout.text(),
    stderr: end.stderr.text(),
    timedOut: end.timedOut,
    durationMs: performance.now() - end.started,
  };
  if (end.stdout.truncated || end.stderr.truncated) result.truncated = true;
  return result;
}

/**
 * Calls `over` with the exit code (null when unknown) once the program is over: its pipes closed
 * after it exited; `graceMs` after it exited while a background child still holds them (the pipes
 * are then cut); or it could not be started (127 for a missing binary, 126 otherwise, the error on
 * stderr). `over` may be called more than once (a later event); the caller settles once.
 */
function whenOver(child: ChildProcess, stderr: BoundedOutput, graceMs: number, over: (exitCode: number | null) => void): void {
  let exitCode: number | null = null;
  let graceTimer: NodeJS.Timeout | undefined;
  const end = () => {
    if (graceTimer) clearTimeout(graceTimer);
    over(exitCode);
  };
  child.on('error', (error: NodeJS.ErrnoException) => {
    // The program could not be started (missing binary): report it like a shell would.
    if (exitCode === null) exitCode = error.code === 'ENOENT' ? 127 : 126;
    stderr.push(Buffer.from(`${error.message}\n`));
    end();
  });
  child.on('exit', (code, signalName) => {
    exitCode = code ?? 128 + (signalName ? (osConstants.signals[signalName] ?? 0) : 0);
    // A background child may keep the pipes open; do not wait for it forever.
    graceTimer = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      end();
    }, graceMs);
  });
  child.on('close', end);
}

/** Writes `input` to the program's stdin and closes it (a program that exits unread is no error). */
function feedStdin(stdin: Writable | null, input: string | Uint8Array | undefined): void {
  if (!stdin) return;
  stdin.on('error', () => {
    // The program exited without reading its input (EPIPE): not an error of the run.
  });
  stdin.end(input);
}

/**
 * Runs one program as the leader of a new process group (`detached`), with stdin closed unless
 * given. On timeout or abort the whole group gets SIGKILL, so children that ignore SIGTERM and
 * grandchildren die too. Resolves with the exit code (128 + signal number when killed); rejects
 * with the abort reason when `signal` fires.
 */
export function runProcessGroup(run: ProcessGroupRun): Promise<ExecResult> {
  const started = performance.now();
  const [file, ...args] = run.argv;
  if (file === undefined) return Promise.reject(new ConfigError('argv: empty', { path: 'argv' }));
  if (run.signal?.aborted) return Promise.reject(run.signal.reason);
  const limit = run.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const stdout = new BoundedOutput(limit, run.onStdout);
  const stderr = new BoundedOutput(limit, run.onStderr);

  return new Promise<ExecResult>((resolve, reject) => {
    let settled = false;
    let timedOut = false;
    let aborted = false;
    let timeoutTimer: NodeJS.Timeout | undefined;

    const child = spawn(file, args, {
      cwd: run.cwd,
      env: run.env,
      detached: true,
      stdio: [run.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const pid = child.pid;

    const killGroup = () => {
      if (pid !== undefined) killProcessGroup(pid, 'SIGKILL');
    };
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      if (timeoutTimer) clearTimeout(timeoutTimer);
      run.signal?.removeEventListener('abort', onAbort);
      if (aborted) reject(run.signal?.reason ?? new SandboxError('aborted'));
      else resolve(execResultOf({ exitCode, stdout, stderr, timedOut, started }));
    };

    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    whenOver(child, stderr, run.closeGraceMs ?? 1000, finish);

    if (pid !== undefined) run.onStart?.(pid);
    run.signal?.addEventListener('abort', onAbort, { once: true });
    if (run.timeoutMs !== undefined) {
      timeoutTimer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, run.timeoutMs);
    }
    feedStdin(child.stdin, run.stdin);
  });
}
