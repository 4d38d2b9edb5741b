import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxError } from '../errors/troupe-error.ts';
import { sleep } from '../util/timeout.ts';
import { createExclusive, ensureOwnedDirectory, readSmallFile } from './owned-directory.ts';
import { liveNotZombie } from './pid-namespace.ts';

/** How long a waiting process first sleeps between looks at the shared slots, in ms (plus jitter). */
const POLL_MS = 25;
/** The longest sleep between looks: a long wait backs off to this. */
const MAX_POLL_MS = 1_000;
/** A mutex directory older than this (ms) belongs to a process that died holding it. */
const STALE_MUTEX_MS = 5_000;

/** How far past two intervals a rate stamp may be before it is taken for a stepped clock or a planted file. */
const RATE_CLOCK_SLACK_MS = 1_000;

/**
 * Creation limits held across every process of one machine that names the same directory: one
 * file per concurrency slot (`slot-<i>`, created with `O_EXCL | O_NOFOLLOW`, mode 0600, holding
 * `<pid> <token>`) and one file with the next allowed start time (`rate`, replaced by rename under
 * a `mkdir` mutex, never written through). The directory and its parent must be this user's, mode
 * 0700-like (checked on every acquire: another user's folder is refused, naming it). A slot whose
 * process is gone (killed, crashed) is reclaimed, so a dead `troupe eval` never holds a slot; a
 * rate stamp more than two intervals ahead (a clock stepped back, a planted file) is reset to now.
 */
export class SharedLimits {
  private readonly token = `${process.pid} ${randomBytes(6).toString('hex')}`;

  constructor(
    readonly dir: string,
    private readonly maxConcurrent: number,
    private readonly intervalMs: number,
  ) {
    this.checkDirectory();
  }

  /** The scope directory and the folder holding it are this user's own (see `ensureOwnedDirectory`). */
  private checkDirectory(): void {
    ensureOwnedDirectory(dirname(this.dir));
    ensureOwnedDirectory(this.dir);
  }

  /** `slot-<i>: pid <p>` for each held slot: who a timeout waited on. */
  holders(): string {
    const held: string[] = [];
    for (let index = 0; index < Math.min(this.maxConcurrent, 64); index++) {
      const holder = safeRead(join(this.dir, `slot-${index}`));
      if (holder) held.push(`slot-${index}: pid ${holder.split(' ')[0]}`);
    }
    return held.join(', ') || 'none';
  }

  /** Waits for a free slot file; resolves with a function that frees it. */
  async acquireSlot(deadline: number | undefined, signal: AbortSignal | undefined): Promise<() => void> {
    if (!Number.isFinite(this.maxConcurrent)) return () => {};
    this.checkDirectory();
    for (let attempt = 0; ; attempt++) {
      for (let index = 0; index < this.maxConcurrent; index++) {
        const path = join(this.dir, `slot-${index}`);
        if (this.tryCreate(path) || (this.reclaimIfDead(path) && this.tryCreate(path))) return () => this.free(path);
      }
      const why = () => `no sandbox slot free across processes (maxConcurrent=${this.maxConcurrent}; held: ${this.holders()})`;
      await this.pause({ deadline, signal, why, attempt });
    }
  }

  /**
   * Books the next start in the shared rate file and waits for it. A waiter books only a start due
   * within one interval (else it sleeps until then and looks again), so `rate` is never
   * legitimately more than two intervals ahead: a stamp further ahead (a clock stepped back, a
   * planted file) is reset to now.
   */
  async waitForRate(deadline: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    if (this.intervalMs === 0) return;
    this.checkDirectory();
    const mutex = join(this.dir, 'rate.lock');
    const path = join(this.dir, 'rate');
    for (;;) {
      const why = () => 'the shared creation-rate file stayed locked';
      while (!this.tryMutex(mutex)) await this.pause({ deadline, signal, why, attempt: 0 });
      let next: number;
      let booked = false;
      try {
        const stamp = safeRead(path);
        const now = Date.now();
        next = Number(stamp) || 0;
        if (next > now + 2 * this.intervalMs + RATE_CLOCK_SLACK_MS) next = now;
        next = Math.max(now, next);
        if (next <= now + this.intervalMs) {
          // A fresh file renamed over `rate`: a symlink planted there is replaced, never written through.
          const fresh = `${path}.${this.token.replace(' ', '-')}`;
          rmQuiet(fresh);
          if (!createExclusive(fresh, String(next + this.intervalMs))) throw new SandboxError(`${fresh}: exists`);
          renameSync(fresh, path);
          booked = true;
        }
      } finally {
        rmdirSync(mutex);
      }
      const wake = booked ? next : next - this.intervalMs;
      if (!booked && deadline !== undefined && wake > deadline)
        throw new SandboxError(
          `the shared creation rate allows no start before the acquire timeout (${this.dir}); set limits.acquireTimeoutMs to wait longer`,
        );
      const delay = wake - Date.now();
      if (delay > 0) await sleep(booked ? delay : delay + Math.random() * POLL_MS, signal);
      if (booked) return;
    }
  }

  private tryCreate(path: string): boolean {
    return createExclusive(path, this.token);
  }

  /** Removes a slot file whose owner process is gone; true when it did. Serialised by a mutex. */
  private reclaimIfDead(path: string): boolean {
    const mutex = `${path}.reclaim`;
    if (!this.tryMutex(mutex)) return false;
    try {
      const holder = safeRead(path);
      if (holder === null) return true;
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
      if (safeRead(path) === this.token) unlinkSync(path);
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
        if (Date.now() - lstatSync(path).mtimeMs > STALE_MUTEX_MS) rmdirSync(path);
      } catch {}
      return false;
    }
  }

  /** Sleeps before the next look (backing off from {@link POLL_MS} to {@link MAX_POLL_MS}); past `deadline`, throws naming `why`. */
  private async pause(options: {
    deadline: number | undefined;
    signal: AbortSignal | undefined;
    why: () => string;
    attempt: number;
  }): Promise<void> {
    const { deadline, signal } = options;
    const now = Date.now();
    if (deadline !== undefined && now >= deadline)
      throw new SandboxError(
        `${options.why()} within the acquire timeout (${this.dir}); set limits.acquireTimeoutMs to wait longer`,
      );
    const wait = Math.min(MAX_POLL_MS, POLL_MS * 1.25 ** options.attempt) * (1 + Math.random());
    await sleep(Math.max(1, Math.min(wait, (deadline ?? Number.POSITIVE_INFINITY) - now)), signal);
  }
}

/** A state file's text; a non-regular file (symlink, FIFO) there reads as a holder that is gone (`''`), missing as null. */
function safeRead(path: string): string | null {
  try {
    return readSmallFile(path);
  } catch (error) {
    if (SandboxError.isInstance(error)) {
      // Only this user can write here: a link or FIFO is debris, removed (unlink never follows it).
      rmQuiet(path);
      return '';
    }
    throw error;
  }
}

function rmQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {}
}
