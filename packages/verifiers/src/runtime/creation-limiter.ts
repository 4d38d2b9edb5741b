import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { sleep } from '../util/timeout.ts';
import { perUserTempDir } from './owned-directory.ts';
import { SharedLimits } from './shared-limits.ts';

/** Limits on sandbox creation shared by every runtime: a concurrency cap and a creation rate. */
export const CreationLimitsSchema = z.object({
  /** Most sandboxes alive at once from one runtime; further creates wait for a slot. */
  maxConcurrent: z.number().int().positive().optional(),
  /** Most sandbox creations started per second (a token bucket with a burst of one second). */
  createsPerSecond: z.number().positive().optional(),
  /**
   * Longest a create may wait for a slot before it fails with a `SandboxError` naming the limit.
   * Default: no bound for this process's own queue (its sandboxes free their slots), and
   * {@link DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS} for a slot and rate shared with other processes.
   */
  acquireTimeoutMs: z.number().int().positive().optional(),
  /**
   * Hold `maxConcurrent` and `createsPerSecond` across every process on the host with the same
   * scope (several `troupe eval` runs against one Docker engine or one cloud quota): `true` scopes
   * them by the runtime's id, a string names the scope. Enforced with lock files under
   * `sharedLimitsDir`; a slot of a process that died is reclaimed.
   */
  shared: z.union([z.boolean(), z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" or "-"')]).optional(),
  /**
   * Where shared limits keep their lock files (default `<tmpdir>/troupe-limits-<uid>`). It must be
   * this user's and not group- or world-writable (created 0700; checked on every acquire).
   */
  sharedLimitsDir: z.string().optional(),
});
/**
 * A runtime's limits on sandbox creation as parsed (concurrency, creates per second, acquire timeout
 * in milliseconds, cross-process sharing); see {@link CreationLimitsSchema}.
 */
export type CreationLimits = z.infer<typeof CreationLimitsSchema>;

/** How long a create waits for a slot or rate shared with other processes when `acquireTimeoutMs` is unset: 10 minutes. */
export const DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS = 600_000;

/** A slot held by one live sandbox; `release()` is idempotent. */
export interface CreationSlot {
  release(): void;
}

/**
 * Enforces a runtime's {@link CreationLimits}: `acquire()` resolves once a concurrency slot is
 * free and the rate allows another creation, in arrival order within the process; with `shared`,
 * the same limits also hold across processes (see {@link SharedLimits}).
 */
export class CreationLimiter {
  private readonly maxConcurrent: number;
  private readonly intervalMs: number;
  private readonly acquireTimeoutMs: number | undefined;
  private live = 0;
  private nextStartAt = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly shared: SharedLimits | undefined;

  /** `runtimeId` names the scope of `shared = true`. */
  constructor(limits: CreationLimits = {}, runtimeId = 'runtime') {
    const parsed = CreationLimitsSchema.safeParse(limits);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`runtime limits: ${issue?.path.join('.') || 'value'}: ${issue?.message}`);
    }
    const { maxConcurrent, createsPerSecond, acquireTimeoutMs, shared, sharedLimitsDir } = parsed.data;
    this.maxConcurrent = maxConcurrent ?? Number.POSITIVE_INFINITY;
    this.intervalMs = createsPerSecond ? 1000 / createsPerSecond : 0;
    this.acquireTimeoutMs = acquireTimeoutMs;
    if (shared) {
      const scope = shared === true ? runtimeId : shared;
      const dir = join(sharedLimitsDir ?? perUserTempDir('troupe-limits'), scope);
      this.shared = new SharedLimits(dir, this.maxConcurrent, this.intervalMs);
    }
  }

  /** Sandboxes currently holding a slot. */
  get active(): number {
    return this.live;
  }

  /** Waits for a concurrency slot and the creation rate; the caller releases the slot when the sandbox stops. */
  async acquire(options: { signal?: AbortSignal } = {}): Promise<CreationSlot> {
    const deadline = this.acquireTimeoutMs === undefined ? undefined : Date.now() + this.acquireTimeoutMs;
    await this.waitForSlot(options.signal);
    this.live++;
    let released = false;
    let freeShared: (() => void) | undefined;
    const slot: CreationSlot = {
      release: () => {
        if (released) return;
        released = true;
        freeShared?.();
        this.live--;
        this.waiting.shift()?.();
      },
    };
    try {
      if (this.shared) {
        // Other processes may hold slots forever (a hung run): the shared wait is always bounded.
        const sharedDeadline = deadline ?? Date.now() + DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS;
        freeShared = await this.shared.acquireSlot(sharedDeadline, options.signal);
        await this.shared.waitForRate(sharedDeadline, options.signal);
      } else {
        await this.waitForRate(options.signal);
      }
    } catch (error) {
      slot.release();
      throw error;
    }
    return slot;
  }

  private waitForSlot(signal: AbortSignal | undefined): Promise<void> {
    if (this.live < this.maxConcurrent && this.waiting.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const entry = () => {
        cleanup();
        resolve();
      };
      const timer =
        this.acquireTimeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              cleanup();
              reject(
                new SandboxError(`no sandbox slot free within ${this.acquireTimeoutMs} ms (maxConcurrent=${this.maxConcurrent})`),
              );
            }, this.acquireTimeoutMs);
      const onAbort = () => {
        cleanup();
        reject(signal?.reason ?? new SandboxError('sandbox creation aborted'));
      };
      const cleanup = () => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  private async waitForRate(signal: AbortSignal | undefined): Promise<void> {
    if (this.intervalMs === 0) return;
    const now = Date.now();
    const startAt = Math.max(now, this.nextStartAt);
    this.nextStartAt = startAt + this.intervalMs;
    const delay = startAt - now;
    if (delay <= 0) return;
    await sleep(delay, signal);
  }
}
