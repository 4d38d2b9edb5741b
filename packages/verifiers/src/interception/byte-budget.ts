import { ConfigError } from '../errors/troupe-error.ts';
/**
 * A process-wide budget of bytes (request bodies being read and parsed): `tryTake` reserves bytes
 * at once when they fit and nobody waits, else `wait` queues the caller (first come, first served) until
 * enough is released. A reservation larger than the whole budget is clamped to it, so it waits
 * until it is alone and never forever. This is back-pressure: a caller that waits has not read
 * its body yet, so the bytes stay in the kernel's socket buffers and the sender's memory.
 */
export class ByteBudget {
  /** Bytes the budget holds. */
  readonly capacity: number;
  private used = 0;
  private highest = 0;
  private readonly waiting: { bytes: number; grant: () => void; signal: AbortSignal | undefined }[] = [];

  constructor(capacity: number) {
    if (!(capacity > 0)) throw new ConfigError(`a byte budget needs a positive capacity, got ${capacity}`, { path: 'capacity' });
    this.capacity = capacity;
  }

  /** Bytes reserved now. */
  get inUse(): number {
    return this.used;
  }

  /** The most bytes ever reserved at once. */
  get peak(): number {
    return this.highest;
  }

  /** Callers waiting for bytes. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Reserves `amount` (a {@link clamp}ed size) when it fits now and nobody waits: true when taken,
   * false when the caller must {@link wait} for it.
   */
  tryTake(amount: number): boolean {
    if (this.waiting.length === 0 && this.used + amount <= this.capacity) {
      this.used += amount;
      if (this.used > this.highest) this.highest = this.used;
      return true;
    }
    return false;
  }

  /**
   * Queues for `amount` (a {@link clamp}ed size): resolves once it is taken, or rejects with
   * `signal`'s reason — leaving the queue, nothing taken — when it aborts first.
   */
  wait(amount: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const entry = {
        bytes: amount,
        signal,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(entry);
        if (at !== -1) this.waiting.splice(at, 1);
        reject(signal?.reason);
        this.pump();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
      this.pump();
    });
  }

  /** The amount a reservation of `bytes` takes (never more than the capacity, never negative). */
  clamp(bytes: number): number {
    return Math.max(0, Math.min(this.capacity, Math.ceil(bytes)));
  }

  /** Gives back `bytes` (a clamped amount earlier taken) and grants waiting callers that now fit. */
  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
    this.pump();
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0] as (typeof this.waiting)[number];
      if (this.used + next.bytes > this.capacity) return;
      this.waiting.shift();
      this.used += next.bytes;
      if (this.used > this.highest) this.highest = this.used;
      next.grant();
    }
  }
}
