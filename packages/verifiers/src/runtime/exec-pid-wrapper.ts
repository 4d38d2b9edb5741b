import { Writable } from 'node:stream';
import { BoundedOutput } from './bounded-output.ts';
/** Directory inside a container where each exec records its pid (the leader of its process group). */
export const EXEC_PID_DIR = '/tmp/.troupe-exec';

/**
 * Runs `argv` so that it records its pid first. Container execs (`docker exec`, Kubernetes exec,
 * both through runc) make every exec its own session and process-group leader, so that pid is
 * also the group id killed on timeout or abort.
 */
export function wrapWithPidFile(argv: string[], pidFile: string): string[] {
  // `/bin/sh` by absolute path and the wrapper's own `mkdir` with a fixed PATH: an `sh` or `mkdir`
  // planted earlier on the container's PATH is never run by the framework (only `"$@"` uses PATH).
  return [
    FRAMEWORK_SH,
    '-c',
    `{ PATH=${FRAMEWORK_PATH} mkdir -p ${EXEC_PID_DIR} && echo $$ > "$0"; } 2>/dev/null; exec "$@"`,
    pidFile,
    ...argv,
  ];
}

/** The shell the framework's own container commands run, by absolute path. */
export const FRAMEWORK_SH = '/bin/sh';
/** `PATH` of the framework's own commands in a sandbox (never the sandbox's own PATH). */
export const FRAMEWORK_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** Shell command that SIGKILLs the process group recorded in `pidFile` (never group 1). */
export function killCommand(pidFile: string): string[] {
  return [
    FRAMEWORK_SH,
    '-c',
    `PATH=${FRAMEWORK_PATH}; p=$(cat "${pidFile}" 2>/dev/null) && [ -n "$p" ] && [ "$p" != 1 ] && { kill -9 -"$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; }; rm -f "${pidFile}"; true`,
  ];
}

/**
 * Collects one output stream of a container exec (`docker exec`, Kubernetes exec), keeping at most
 * `limit` bytes (`truncated` turns true when more came) and passing each chunk, decoded as UTF-8,
 * to `onChunk` as it arrives.
 */
export class ExecOutputCollector extends Writable {
  private readonly output: BoundedOutput;

  constructor(limit: number, onChunk?: (chunk: string) => void) {
    super();
    this.output = new BoundedOutput(limit, onChunk);
  }

  /** Whether bytes beyond the limit arrived (and were dropped). */
  get truncated(): boolean {
    return this.output.truncated;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.output.push(chunk);
    callback();
  }

  /** The kept bytes. */
  bytes(): Buffer {
    return this.output.bytes();
  }

  /** The kept bytes as UTF-8, after passing a trailing incomplete character (as U+FFFD) to `onChunk`. */
  text(): string {
    return this.output.text();
  }
}

/** What `guardExec` saw: whether the exec was killed for its timeout or for an abort. */
export interface ExecGuard {
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** Clears the timer and the abort listener (call once the exec is over). */
  dispose(): void;
}

/**
 * Calls `kill` when an exec runs past `timeoutMs` (then `timedOut` is true) or when `signal`
 * aborts (then `aborted` is true), the shared watch of the docker, kubernetes and e2b execs.
 */
export function guardExec(options: { timeoutMs?: number; signal?: AbortSignal; kill: () => void }): ExecGuard {
  const state = { timedOut: false, aborted: false };
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          state.timedOut = true;
          options.kill();
        }, options.timeoutMs);
  const onAbort = () => {
    state.aborted = true;
    options.kill();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    get timedOut() {
      return state.timedOut;
    },
    get aborted() {
      return state.aborted;
    },
    dispose() {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
}
