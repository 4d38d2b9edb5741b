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
  const onParent = () => controller.abort(options.parent?.reason);
  if (options.parent?.aborted) controller.abort(options.parent.reason);
  options.parent?.addEventListener('abort', onParent, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    if (options.seconds == null) return;
    timer = setTimeout(() => {
      const error = new TimeoutError(`${options.stage} timeout after ${options.seconds}s`);
      controller.abort(error);
      reject(error);
    }, options.seconds * 1000);
  });
  try {
    return await Promise.race([fn(controller.signal), expiry]);
  } finally {
    if (timer) clearTimeout(timer);
    options.parent?.removeEventListener('abort', onParent);
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

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
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
