import { readFileSync } from 'node:fs';

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
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}
