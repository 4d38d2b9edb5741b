import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../errors/troupe-error.ts';
import { sleep } from '../util/timeout.ts';
import { liveNotZombie } from './pid-namespace.ts';

/** How long a waiting process sleeps between looks at the shared slots, in ms (plus jitter). */
const POLL_MS = 25;
/** A mutex directory older than this (ms) belongs to a process that died holding it. */
const STALE_MUTEX_MS = 5_000;

/**
 * Creation limits held across every process of one machine that names the same directory: one
 * file per concurrency slot (`slot-<i>`, created with `O_EXCL`, holding `<pid> <token>`) and one
 * file with the next allowed start time (`rate`, updated under a `mkdir` mutex). A slot whose
 * process is gone (killed, crashed) is reclaimed, so a dead `troupe eval` never holds a slot.
 */
export class SharedLimits {
  private readonly token = `${process.pid} ${randomBytes(6).toString('hex')}`;

  constructor(
    readonly dir: string,
    private readonly maxConcurrent: number,
    private readonly intervalMs: number,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  /** Waits for a free slot file; resolves with a function that frees it. */
  async acquireSlot(deadline: number | undefined, signal: AbortSignal | undefined): Promise<() => void> {
    if (!Number.isFinite(this.maxConcurrent)) return () => {};
    for (;;) {
      for (let index = 0; index < this.maxConcurrent; index++) {
        const path = join(this.dir, `slot-${index}`);
        if (this.tryCreate(path) || (this.reclaimIfDead(path) && this.tryCreate(path))) return () => this.free(path);
      }
      await this.pause(deadline, signal, `no sandbox slot free across processes (maxConcurrent=${this.maxConcurrent})`);
    }
  }

  /** Takes the next start time from the shared rate file and waits until it comes. */
  async waitForRate(deadline: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    if (this.intervalMs === 0) return;
    const mutex = join(this.dir, 'rate.lock');
    while (!this.tryMutex(mutex)) await this.pause(deadline, signal, 'the shared creation-rate file stayed locked');
    let startAt: number;
    try {
      const path = join(this.dir, 'rate');
      let next = 0;
      try {
        next = Number(readFileSync(path, 'utf8')) || 0;
      } catch {}
      startAt = Math.max(Date.now(), next);
      writeFileSync(path, String(startAt + this.intervalMs));
    } finally {
      rmdirSync(mutex);
    }
    const delay = startAt - Date.now();
    if (delay > 0) await sleep(delay, signal);
  }

  private tryCreate(path: string): boolean {
    try {
      writeFileSync(path, this.token, { flag: 'wx' });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw new SandboxError(`cannot create the shared slot file ${path}`, { cause: error });
    }
  }

  /** Removes a slot file whose owner process is gone; true when it did. Serialised by a mutex. */
  private reclaimIfDead(path: string): boolean {
    const mutex = `${path}.reclaim`;
    if (!this.tryMutex(mutex)) return false;
    try {
      let holder: string;
      try {
        holder = readFileSync(path, 'utf8');
      } catch {
        return true;
      }
      const pid = Number(holder.split(' ')[0]);
      if (Number.isInteger(pid) && pid > 0 && liveNotZombie(pid)) return false;
      unlinkSync(path);
      return true;
    } finally {
      rmdirSync(mutex);
    }
  }

  private free(path: string): void {
    try {
      if (readFileSync(path, 'utf8') === this.token) unlinkSync(path);
    } catch {}
  }

  /** A `mkdir` mutex; one left behind by a dead process is broken after {@link STALE_MUTEX_MS}. */
  private tryMutex(path: string): boolean {
    try {
      mkdirSync(path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(path).mtimeMs > STALE_MUTEX_MS) rmdirSync(path);
      } catch {}
      return false;
    }
  }

  private async pause(deadline: number | undefined, signal: AbortSignal | undefined, why: string): Promise<void> {
    if (deadline !== undefined && Date.now() >= deadline)
      throw new SandboxError(`${why} within the acquire timeout (${this.dir})`);
    await sleep(POLL_MS + Math.random() * POLL_MS, signal);
  }
}
