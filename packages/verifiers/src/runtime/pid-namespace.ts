import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { sep } from 'node:path';
import { EngineError, SandboxError } from '../errors/troupe-error.ts';

const UNSHARE = '/usr/bin/unshare';
const NSENTER = '/usr/bin/nsenter';
/** The namespace's init: a shell that reaps every orphan reparented to it (`wait` is waitpid(-1)). */
const INIT = ['/bin/sh', '-c', 'trap "" HUP INT TERM; while :; do sleep 3600 & wait; done'];

let supported: boolean | undefined;

/**
 * True when this process may make PID namespaces: it runs as root and `unshare --pid --fork
 * --kill-child --mount-proc` works (util-linux). Checked once.
 */
export function pidNamespacesSupported(): boolean {
  if (supported !== undefined) return supported;
  if (process.platform !== 'linux' || process.getuid?.() !== 0 || !existsSync(UNSHARE) || !existsSync(NSENTER)) {
    supported = false;
    return supported;
  }
  const probe = spawnSync(UNSHARE, ['--pid', '--fork', '--kill-child', '--mount-proc', '--', '/bin/true'], {
    stdio: 'ignore',
    timeout: 5000,
  });
  supported = probe.status === 0;
  return supported;
}

/**
 * One PID (and mount, for its own `/proc`) namespace per local sandbox. Every command enters it
 * through `nsenter`, so whatever it starts — background jobs, `setsid`, double forks, `nohup`
 * daemons — lives in the namespace. {@link killAll} kills the namespace's init, and the kernel
 * then kills every process left in it: nothing outlives it, whatever it did to its process group.
 * Inside, `ps` and `kill` see the namespace's own pids only, never the host's processes.
 */
export class PidNamespace {
  private holder: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  /** Starts the namespace (idempotent while it runs); returns unshare's pid. */
  private ensure(): number {
    const current = this.holder;
    if (current?.pid !== undefined && current.exitCode === null && current.signalCode === null) return current.pid;
    const holder = spawn(UNSHARE, ['--pid', '--fork', '--kill-child', '--mount-proc', '--', ...INIT], {
      stdio: 'ignore',
      detached: true,
    });
    holder.unref();
    this.exited = new Promise<void>((resolve) => {
      holder.once('exit', () => resolve());
      holder.once('error', () => resolve());
    });
    if (holder.pid === undefined)
      throw new EngineError('could not start the sandbox PID namespace (unshare)', { engine: 'unshare' });
    this.holder = holder;
    waitForInit(holder.pid);
    return holder.pid;
  }

  /**
   * `argv` run inside the namespace, in `cwd`. Entering a mount namespace resets the directory,
   * and nsenter's own `--wd` keeps a handle from the host's mounts (then `rename` and `link`
   * between it and absolute paths fail with EXDEV), so `/bin/sh` changes directory inside first.
   */
  wrap(argv: string[], cwd: string): string[] {
    const pid = this.ensure();
    return [
      NSENTER,
      `--pid=/proc/${pid}/ns/pid_for_children`,
      `--mount=/proc/${pid}/ns/mnt`,
      '--',
      '/bin/sh',
      '-c',
      'cd -- "$1" && shift && exec "$@"',
      'sh',
      cwd,
      ...argv,
    ];
  }

  /**
   * Kills every process in the namespace and waits until the kernel has torn it down. The next
   * {@link wrap} starts a fresh namespace.
   */
  async killAll(): Promise<void> {
    const holder = this.holder;
    if (holder?.pid === undefined) return;
    const init = initPid(holder.pid);
    // Unref'd while it runs (a live namespace must not keep the process up); ref'd while its
    // exit is awaited, so that the wait itself keeps the event loop alive.
    holder.ref();
    for (const target of [holder.pid, init]) {
      try {
        if (target !== undefined) process.kill(target, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await this.exited;
    // The namespace's init finishes exiting only once every process in it is dead.
    for (let attempt = 0; init !== undefined && attempt < 500 && liveNotZombie(init); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.holder = undefined;
    if (init !== undefined && liveNotZombie(init)) {
      throw new SandboxError(`the PID namespace's init (pid ${init}) is still alive 5 s after SIGKILL: a process in it survived`);
    }
  }

  /** Synchronous kill for process exit. */
  killSync(): void {
    const pid = this.holder?.pid;
    if (pid === undefined) return;
    for (const target of [pid, initPid(pid)]) {
      try {
        if (target !== undefined) process.kill(target, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

/** The host pid of the namespace's init (unshare's only child). */
function initPid(unsharePid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8').trim().split(/\s+/);
    const pid = Number(children[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Waits (briefly, synchronously) until unshare has forked the namespace's init and it runs the shell. */
function waitForInit(unsharePid: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; attempt < 1000; attempt++) {
    const init = initPid(unsharePid);
    if (init !== undefined) {
      try {
        if (readlinkSync(`/proc/${init}/exe`) !== readlinkSync(`/proc/${unsharePid}/exe`)) return;
      } catch {
        return;
      }
    }
    Atomics.wait(pause, 0, 0, 2);
  }
}

/**
 * True when `/proc/<pid>` exists and its state is not `Z`. A killed process whose parent has not
 * reaped it yet (or whose new parent, PID 1 of a container, never does) is a zombie: dead here.
 */
export function liveNotZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * The fallback without PID namespaces (not root): SIGKILLs every process of this host whose
 * working directory lies under `root` or whose environment names `SANDBOX_ROOT=<root>`. Best
 * effort — a process that left the directory and cleared its environment escapes it; see
 * docs/runtimes.md.
 */
export function killProcessesUnder(root: string): number {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  let killed = 0;
  const marker = `SANDBOX_ROOT=${root}\0`;
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    let match = false;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      match = cwd === root || cwd.startsWith(root + sep);
    } catch {
      // Not ours to inspect, or gone.
    }
    if (!match) {
      try {
        match = `${readFileSync(`/proc/${pid}/environ`, 'latin1')}\0`.includes(marker);
      } catch {
        // Not ours to inspect, or gone.
      }
    }
    if (!match) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}
