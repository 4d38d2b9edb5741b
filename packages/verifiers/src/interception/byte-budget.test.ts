import { describe, expect, it } from 'vitest';
import { ByteBudget } from './byte-budget.ts';

describe('ByteBudget', () => {
  it('grants in arrival order as bytes are released, never holding more than its capacity', async () => {
    const budget = new ByteBudget(100);
    expect(budget.tryTake(60)).toBe(true);
    expect(budget.tryTake(60)).toBe(false);
    const granted: string[] = [];
    const first = budget.wait(60).then(() => granted.push('first'));
    const second = budget.wait(30).then(() => granted.push('second'));
    // A small request that would fit still queues behind the waiting ones (no starvation).
    expect(budget.tryTake(10)).toBe(false);
    budget.release(60);
    await Promise.all([first, second]);
    expect(granted).toEqual(['first', 'second']);
    expect(budget.inUse).toBe(90);
    expect(budget.peak).toBe(90);
  });

  it('clamps a reservation larger than the capacity, so it waits until it is alone rather than forever', async () => {
    const budget = new ByteBudget(100);
    expect(budget.clamp(1e9)).toBe(100);
    expect(budget.tryTake(1)).toBe(true);
    const big = budget.wait(budget.clamp(1e9));
    budget.release(1);
    await big;
    expect(budget.inUse).toBe(100);
  });

  it('drops a waiter whose signal aborts, taking nothing, and grants the next one', async () => {
    const budget = new ByteBudget(100);
    budget.tryTake(100);
    const controller = new AbortController();
    const gone = budget.wait(50, controller.signal);
    const next = budget.wait(50);
    controller.abort(new Error('client went away'));
    await expect(gone).rejects.toThrow('client went away');
    budget.release(100);
    await next;
    expect(budget.inUse).toBe(50);
    expect(budget.queued).toBe(0);
  });
});
