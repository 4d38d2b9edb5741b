import { TimeoutError } from '../errors/troupe-error.ts';

/**
 * Runs `fn` with an AbortSignal that fires after `seconds` (or when `parent` aborts). On expiry
 * the promise rejects with a `TimeoutError` naming the stage, even if `fn` ignores the signal.
 */
export function withDeadline<T>(
  options: { seconds?: number | null; stage: string; parent?: AbortSignal },
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  // No limit and no parent: nothing could ever abort a controller of its own, so the work gets
  // the shared never-aborting signal (an AbortSignal costs ≈3–5 µs to make in Node 20; an episode
  // made one per hand), and its own promise (no frame around it; a synchronous throw still rejects).
  if (options.seconds == null && !options.parent) {
    try {
      return Promise.resolve(fn(NEVER_ABORTED));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return withOwnDeadline(options, fn);
}

/** `withDeadline` with a controller of its own: aborted on expiry or when `parent` aborts. */
async function withOwnDeadline<T>(
  options: { seconds?: number | null; stage: string; parent?: AbortSignal },
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const { parent, seconds } = options;
  const controller = new AbortController();
  const onParent = parent ? forwardAbort(parent, controller) : undefined;
  if (parent && onParent) {
    if (parent.aborted) controller.abort(parent.reason);
    parent.addEventListener('abort', onParent, { once: true });
  }
  try {
    // Without a limit nothing can expire: no timer, no race.
    if (seconds == null) return await fn(controller.signal);
    return await raceTimer(seconds, options.stage, fn(controller.signal), (error) => controller.abort(error));
  } finally {
    if (parent && onParent) parent.removeEventListener('abort', onParent);
  }
}

/**
 * A signal that never aborts, shared by all work that nothing can abort. `AbortSignal.any([])`: a
 * composite signal with no sources, which `AbortSignal.any` skips (no back-reference from it to the
 * signals built over it). A listener added to it could never run, so none is kept: adding and
 * removing one are no-ops, and nothing piles up on a signal that lives as long as the process.
 */
const NEVER_ABORTED: AbortSignal = Object.defineProperties(AbortSignal.any([]), {
  addEventListener: { value: ignoreListener },
  removeEventListener: { value: ignoreListener },
});

function ignoreListener(): void {}

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
  return await raceTimer(seconds, options.stage, fn());
}

/** `work`, or a `TimeoutError` (passed to `onExpire` first) after `seconds`; the timer is cleared either way. */
async function raceTimer<T>(
  seconds: number,
  stage: string,
  work: Promise<T>,
  onExpire?: (error: TimeoutError) => void,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new TimeoutError(`${stage} timeout after ${seconds}s`);
      onExpire?.(error);
      reject(error);
    }, seconds * 1000);
  });
  try {
    return await Promise.race([work, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** A counting semaphore; `limit` null = unlimited. */
export class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly limit: number | null) {}

  /** True when there is no limit (`run(fn)` is then just `fn()`). */
  get unlimited(): boolean {
    return this.limit === null;
  }

  async acquire(): Promise<() => void> {
    const wait = this.take();
    if (wait) await wait;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.give();
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
    const wait = this.take();
    if (wait) await wait;
    try {
      return await fn();
    } finally {
      this.give();
    }
  }

  /** Takes a slot: at once when one is free (no await of a new promise), else after a release hands it over. */
  private take(): Promise<void> | undefined {
    if (this.limit !== null && this.active >= this.limit) return new Promise<void>((resolve) => this.waiters.push(resolve));
    this.active++;
    return undefined;
  }

  /** Gives a slot back: to the first waiter, else to the pool. */
  private give(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }
}

/**
 * Resolves after `ms` milliseconds (at once when `ms` ≤ 0); rejects with the signal's reason when
 * it aborts first or already has. The abort listener is removed either way, so a loop that polls
 * with one long-lived signal leaves no listeners behind.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
