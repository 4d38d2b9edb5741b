import { z } from 'zod';
import { sleep } from '../util/timeout.ts';

/** How a model client retries: exponential backoff with full jitter, honouring `retry-after`. */
export const RetryOptionsSchema = z
  .object({
    /** Retries after the first attempt (default 3). */
    maxRetries: z.number().int().nonnegative().default(3),
    /** Backoff base: attempt n waits up to `baseDelayMs · 2^n` (default 500). */
    baseDelayMs: z.number().nonnegative().default(500),
    /** Cap of one backoff wait (default 8000). */
    maxDelayMs: z.number().nonnegative().default(8000),
    /** A server's `retry-after` longer than this is not waited for: the call fails (default 60000). */
    maxRetryAfterMs: z.number().nonnegative().default(60_000),
  })
  .strict();
/** Retry settings as given (every field optional; delays in milliseconds); see {@link RetryOptionsSchema}. */
export type RetryOptions = z.input<typeof RetryOptionsSchema>;
/** Retry settings with every default applied (delays in milliseconds); see {@link RetryOptionsSchema}. */
export type ResolvedRetryOptions = z.output<typeof RetryOptionsSchema>;

/** What a policy decides about one failure. */
export interface RetryDecision {
  retry: boolean;
  /** The server's requested wait (`retry-after-ms` / `retry-after`), if any. */
  retryAfterMs?: number;
}

/** Classifies a failure; plug in your own to retry other errors. */
export type RetryClassifier = (error: unknown) => RetryDecision;

/** Statuses worth retrying: timeouts, conflicts, rate limits and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Reads `retry-after-ms`, then `retry-after` (seconds or an HTTP date), in milliseconds. */
export function retryAfterMs(
  headers: { get(name: string): string | null } | null | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms != null && ms !== '') {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get('retry-after');
  if (after != null && after !== '') {
    const seconds = Number.parseFloat(after);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  return undefined;
}

/** The wait before retry number `attempt` (0-based): full jitter, or the server's retry-after. */
export function backoffDelayMs(options: {
  policy: ResolvedRetryOptions;
  attempt: number;
  retryAfterMs?: number | undefined;
  random?: () => number;
}): number {
  const { policy, attempt } = options;
  if (options.retryAfterMs !== undefined) return Math.min(options.retryAfterMs, policy.maxRetryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.floor((options.random ?? Math.random)() * ceiling);
}

/** Options of `withRetry`. */
export interface WithRetryOptions {
  policy: ResolvedRetryOptions;
  classify: RetryClassifier;
  signal?: AbortSignal | undefined;
  /** Called before each wait (for logs and tests). */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  random?: () => number;
}

/**
 * Runs `fn` until it succeeds, the classifier refuses, the budget is spent, or the signal aborts.
 * Throws the last error.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: WithRetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (options.signal?.aborted || attempt >= options.policy.maxRetries) throw error;
      const decision = options.classify(error);
      if (!decision.retry) throw error;
      if (decision.retryAfterMs !== undefined && decision.retryAfterMs > options.policy.maxRetryAfterMs) throw error;
      const delayMs = backoffDelayMs({
        policy: options.policy,
        attempt,
        retryAfterMs: decision.retryAfterMs,
        ...(options.random ? { random: options.random } : {}),
      });
      options.onRetry?.({ attempt, delayMs, error });
      await sleep(delayMs, options.signal);
    }
  }
}
