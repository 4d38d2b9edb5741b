import { readdirSync, readFileSync } from 'node:fs';
import { liveNotZombie } from '../runtime/pid-namespace.ts';

/**
 * True when a process exists and is not a zombie. A killed process whose parent has not reaped it
 * yet (or whose new parent, PID 1 of a container, never does) still answers `kill(pid, 0)`; its
 * state in `/proc/<pid>/stat` is `Z`. Tests that check "the timeout killed the process" use this.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return liveNotZombie(pid);
}

/**
 * Host pids of live (non-zombie) processes, other than this one, whose command line contains
 * `marker` — containers' processes too (one kernel). Tests that check "nothing was left running".
 */
export function hostPidsWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number)
    .filter((pid) => processAlive(pid));
}
