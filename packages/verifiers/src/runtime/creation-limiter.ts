import { z } from 'zod';
import { SandboxError } from '../errors/troupe-error.ts';

/** Limits on sandbox creation shared by every runtime: a concurrency cap and a creation rate. */
export const CreationLimitsSchema = z.object({
  /** Most sandboxes alive at once from one runtime; further creates wait for a slot. */
  maxConcurrent: z.number().int().positive().optional(),
  /** Most sandbox creations started per second (a token bucket with a burst of one second). */
  createsPerSecond: z.number().positive().optional(),
  /** Longest a create may wait for a slot before it fails with a `SandboxError`. */
  acquireTimeoutMs: z.number().int().positive().optional(),
});
export type CreationLimits = z.infer<typeof CreationLimitsSchema>;

/** A slot held by one live sandbox; `release()` is idempotent. */
export interface CreationSlot {
  release(): void;
}

/**
 * Enforces a runtime's {@link CreationLimits} inside one process: `acquire()` resolves once a
 * concurrency slot is free and the rate allows another creation, in arrival order.
 */
export class CreationLimiter {
  private readonly maxConcurrent: number;
  private readonly intervalMs: number;
  private readonly acquireTimeoutMs: number | undefined;
  private live = 0;
  private nextStartAt = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(limits: CreationLimits = {}) {
    const parsed = CreationLimitsSchema.parse(limits);
    this.maxConcurrent = parsed.maxConcurrent ?? Number.POSITIVE_INFINITY;
    this.intervalMs = parsed.createsPerSecond ? 1000 / parsed.createsPerSecond : 0;
    this.acquireTimeoutMs = parsed.acquireTimeoutMs;
  }

  /** Sandboxes currently holding a slot. */
  get active(): number {
    return this.live;
  }

  /** Waits for a concurrency slot and the creation rate; the caller releases the slot when the sandbox stops. */
  async acquire(options: { signal?: AbortSignal } = {}): Promise<CreationSlot> {
    await this.waitForSlot(options.signal);
    this.live++;
    let released = false;
    const slot: CreationSlot = {
      release: () => {
        if (released) return;
        released = true;
        this.live--;
        this.waiting.shift()?.();
      },
    };
    try {
      await this.waitForRate(options.signal);
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
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, delay);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason ?? new SandboxError('sandbox creation aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
