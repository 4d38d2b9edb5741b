import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CreationLimiter } from './creation-limiter.ts';

describe('CreationLimiter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('starts at most createsPerSecond creations per second, in arrival order', async () => {
    const limiter = new CreationLimiter({ createsPerSecond: 2 });
    const started: number[] = [];
    const all = [0, 1, 2, 3].map((index) => limiter.acquire().then(() => started.push(index)));
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toEqual([0]);
    await vi.advanceTimersByTimeAsync(500);
    expect(started).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(started).toEqual([0, 1, 2, 3]);
    await Promise.all(all);
  });

  it('holds creates beyond maxConcurrent until a slot is released', async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 2 });
    const first = await limiter.acquire();
    await limiter.acquire();
    let third = false;
    const pending = limiter.acquire().then((slot) => {
      third = true;
      return slot;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(third).toBe(false);
    expect(limiter.active).toBe(2);
    first.release();
    first.release();
    await pending;
    expect(third).toBe(true);
    expect(limiter.active).toBe(2);
  });

  it('fails with a SandboxError when no slot frees up within acquireTimeoutMs', async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 1, acquireTimeoutMs: 1000 });
    await limiter.acquire();
    const waiting = limiter.acquire();
    const assertion = expect(waiting).rejects.toMatchObject({
      name: 'SandboxError',
      message: expect.stringMatching(/maxConcurrent=1/),
    });
    await vi.advanceTimersByTimeAsync(1000);
    await assertion;
  });

  it('rejects a waiting create when its signal aborts', async () => {
    const limiter = new CreationLimiter({ maxConcurrent: 1 });
    await limiter.acquire();
    const controller = new AbortController();
    const waiting = limiter.acquire({ signal: controller.signal });
    controller.abort(new Error('run cancelled'));
    await expect(waiting).rejects.toThrow('run cancelled');
  });
});
