import { TimeoutError } from '../errors/troupe-error.ts';

/**
 * Runs `fn` with an AbortSignal that fires after `seconds` (or when `parent` aborts). On expiry
 * the promise rejects with a `TimeoutError` naming the stage, even if `fn` ignores the signal.
 */
export async function withDeadline<T>(
  options: { seconds?: number | null; stage: string; parent?: AbortSignal },
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const { parent, seconds } = options;
  const onParent = parent ? forwardAbort(parent, controller) : undefined;
  if (parent && onParent) {
    if (parent.aborted) controller.abort(parent.reason);
    parent.addEventListener('abort', onParent, { once: true });
  }
  try {
    // Without a limit nothing can expire: no timer, no race.
    if (seconds == null) return await fn(controller.signal);
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new TimeoutError(`${options.stage} timeout after ${seconds}s`);
        controller.abort(error);
        reject(error);
      }, seconds * 1000);
    });
    try {
      return await Promise.race([fn(controller.signal), expiry]);
    } finally {
      clearTimeout(timer);
    }
  } finally {
    if (parent && onParent) parent.removeEventListener('abort', onParent);
  }
}

/** The listener that aborts `controller` with `parent`'s reason. */
function forwardAbort(parent: AbortSignal, controller: AbortController): () => void {
  return () => controller.abort(parent.reason);
}

/**
 * `withDeadline` for work that takes no AbortSignal (finalize and scoring hooks): the same
 * `TimeoutError` on expiry, without allocating a controller; no timer at all when `seconds` is null.
 */
export async function withTimeout<T>(options: { seconds?: number | null; stage: string }, fn: () => Promise<T>): Promise<T> {
  const { seconds } = options;
  if (seconds == null) return await fn();
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${options.stage} timeout after ${seconds}s`)), seconds * 1000);
  });
  try {
    return await Promise.race([fn(), expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** A counting semaphore; `limit` null = unlimited. */
export class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly limit: number | null) {}

  async acquire(): Promise<() => void> {
    if (this.limit !== null && this.active >= this.limit) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    } else {
      this.active++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    };
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    // Unlimited: no slot to take or give back, and no wrapper promise around fn's own.
    if (this.limit === null) {
      try {
        return Promise.resolve(fn());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.runLimited(fn);
  }

  /** `acquire`, run, release, without the release closure (a free slot is taken at once). */
  private async runLimited<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= (this.limit as number)) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
