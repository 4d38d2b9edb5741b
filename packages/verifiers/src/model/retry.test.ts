import { describe, expect, it } from 'vitest';
import { backoffDelayMs, isRetryableStatus, RetryOptionsSchema, retryAfterMs, withRetry } from './retry.ts';

const headers = (values: Record<string, string>) => new Headers(values);
const policy = RetryOptionsSchema.parse({ maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1000 });

describe('retry policy', () => {
  it('retries 408, 409, 429 and 5xx only', () => {
    expect([408, 409, 429, 500, 502, 503, 529].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 413, 422].some(isRetryableStatus)).toBe(false);
  });

  it('reads retry-after-ms first, then retry-after in seconds or as an HTTP date', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': '2' }))).toBe(2000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }), now)).toBe(3000);
    expect(retryAfterMs(headers({}))).toBeUndefined();
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });

  it('draws full jitter below an exponentially growing, capped ceiling', () => {
    expect(backoffDelayMs({ policy, attempt: 0, random: () => 0.999 })).toBe(99);
    expect(backoffDelayMs({ policy, attempt: 2, random: () => 0.5 })).toBe(200);
    expect(backoffDelayMs({ policy, attempt: 10, random: () => 0.999 })).toBe(999);
    expect(backoffDelayMs({ policy, attempt: 3, random: () => 0 })).toBe(0);
  });

  it('waits what the server asks (retry-after) instead of the jitter, capped by maxRetryAfterMs', () => {
    expect(backoffDelayMs({ policy, attempt: 0, retryAfterMs: 1234, random: () => 0 })).toBe(1234);
    const capped = RetryOptionsSchema.parse({ maxRetryAfterMs: 500 });
    expect(backoffDelayMs({ policy: capped, attempt: 0, retryAfterMs: 1234 })).toBe(500);
  });

  it('runs until success within the budget, reporting each wait', async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await withRetry(
      async () => {
        calls++;
        if (calls < 3) throw new Error(`fail ${calls}`);
        return 'ok';
      },
      {
        policy: { ...policy, baseDelayMs: 4 },
        classify: () => ({ retry: true, retryAfterMs: 3 }),
        onRetry: ({ delayMs }) => waits.push(delayMs),
      },
    );
    expect(result).toBe('ok');
    expect(waits).toEqual([3, 3]);
  });

  it('throws the last error when the budget is spent or the classifier refuses', async () => {
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(new Error(`fail ${calls}`));
    };
    await expect(
      withRetry(failing, { policy: { ...policy, baseDelayMs: 1 }, classify: () => ({ retry: true }) }),
    ).rejects.toThrow('fail 4');
    calls = 0;
    await expect(withRetry(failing, { policy, classify: () => ({ retry: false }) })).rejects.toThrow('fail 1');
    calls = 0;
    // A server asking for a longer wait than we accept fails at once.
    await expect(
      withRetry(failing, { policy: { ...policy, maxRetryAfterMs: 10 }, classify: () => ({ retry: true, retryAfterMs: 60_000 }) }),
    ).rejects.toThrow('fail 1');
  });
});
