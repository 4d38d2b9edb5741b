import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../errors/troupe-error.ts';
import { Semaphore, withDeadline, withTimeout } from './timeout.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Semaphore', () => {
  it('runs at most `limit` at once, hands slots over in arrival order, and frees a slot when fn throws', async () => {
    const semaphore = new Semaphore(2);
    const started: number[] = [];
    const gates = new Map<number, () => void>();
    const job = (i: number) =>
      semaphore.run(async () => {
        started.push(i);
        await new Promise<void>((resolve) => gates.set(i, resolve));
        if (i === 1) throw new Error('boom');
        return i;
      });
    const runs = [0, 1, 2, 3].map(job);
    await tick();
    expect(started).toEqual([0, 1]);
    gates.get(1)?.();
    await expect(runs[1]).rejects.toThrow('boom');
    await tick();
    expect(started).toEqual([0, 1, 2]);
    gates.get(0)?.();
    expect(await runs[0]).toBe(0);
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    gates.get(2)?.();
    gates.get(3)?.();
    expect(await Promise.all([runs[2], runs[3]])).toEqual([2, 3]);
    // Both slots are free again.
    const release = [await semaphore.acquire(), await semaphore.acquire()];
    let third = false;
    const pending = semaphore.acquire().then(() => {
      third = true;
    });
    await tick();
    expect(third).toBe(false);
    release[0]?.();
    release[0]?.(); // idempotent: frees one slot only
    await pending;
    expect(third).toBe(true);
  });

  it('without a limit runs everything at once and turns a synchronous throw into a rejection', async () => {
    const semaphore = new Semaphore(null);
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        semaphore.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await tick();
          running--;
        }),
      ),
    );
    expect(peak).toBe(5);
    const result = semaphore.run(() => {
      throw new Error('sync');
    });
    await expect(result).rejects.toThrow('sync');
  });
});

describe('withDeadline / withTimeout', () => {
  it('reject with a TimeoutError naming the stage, and abort the signal on expiry', async () => {
    let seen: AbortSignal | undefined;
    const never = (signal: AbortSignal) => {
      seen = signal;
      return new Promise<never>(() => {});
    };
    await expect(withDeadline({ seconds: 0.01, stage: 'setup' }, never)).rejects.toThrow(TimeoutError);
    expect(seen?.aborted).toBe(true);
    await expect(withTimeout({ seconds: 0.01, stage: 'scoring' }, () => new Promise<never>(() => {}))).rejects.toThrow(
      'scoring timeout after 0.01s',
    );
  });

  it('pass results and errors through, with and without a limit', async () => {
    expect(await withDeadline({ seconds: null, stage: 'a' }, async (signal) => signal.aborted)).toBe(false);
    expect(await withDeadline({ seconds: 5, stage: 'a' }, async () => 1)).toBe(1);
    expect(await withTimeout({ seconds: null, stage: 'a' }, async () => 2)).toBe(2);
    await expect(withTimeout({ seconds: 5, stage: 'a' }, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
  });

  it('give work that nothing can abort a signal that never aborts and keeps no listeners', async () => {
    const signals: AbortSignal[] = [];
    for (let i = 0; i < 2; i++) {
      await withDeadline({ seconds: null, stage: 'episode' }, async (signal) => {
        signals.push(signal);
        signal.addEventListener('abort', () => {});
      });
    }
    const [a, b] = signals as [AbortSignal, AbortSignal];
    expect(a).toBe(b);
    expect(a.aborted).toBe(false);
    expect(getEventListeners(a, 'abort')).toHaveLength(0);
    expect(() => a.throwIfAborted()).not.toThrow();
    // A signal combined with it follows the other signals.
    const other = new AbortController();
    const combined = AbortSignal.any([a, other.signal]);
    other.abort(new Error('stop'));
    expect(combined.aborted).toBe(true);
    expect(a.aborted).toBe(false);
    // With a limit, the work still gets a signal of its own.
    await withDeadline({ seconds: 5, stage: 'episode' }, async (signal) => expect(signal).not.toBe(a));
  });

  it('abort the signal when the parent aborts, and stop listening to the parent afterwards', async () => {
    const parent = new AbortController();
    let inner: AbortSignal | undefined;
    const running = withDeadline({ stage: 'agent', parent: parent.signal }, (signal) => {
      inner = signal;
      return new Promise<string>((resolve) => signal.addEventListener('abort', () => resolve(String(signal.reason))));
    });
    parent.abort('stop');
    expect(await running).toBe('stop');
    expect(inner?.aborted).toBe(true);
    const aborted = new AbortController();
    aborted.abort('early');
    expect(await withDeadline({ stage: 'x', parent: aborted.signal }, async (signal) => signal.reason)).toBe('early');
  });
});
