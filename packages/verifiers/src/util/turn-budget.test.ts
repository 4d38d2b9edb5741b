import { describe, expect, it } from 'vitest';
import { TurnBudget } from './turn-budget.ts';

/** Busy-waits at least `ms` milliseconds (synchronous work the loop cannot interrupt). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * Runs `units` units of 1 ms+ work, all asking the budget at once, while a 1 ms interval counts the
 * timer phases that got to run; returns, per unit, its order and the timer count when it ran.
 */
async function burst(budget: TurnBudget, units: number, work: () => Promise<void>) {
  let timerPhases = 0;
  const interval = setInterval(() => timerPhases++, 1);
  const ran: { unit: number; phase: number }[] = [];
  try {
    await Promise.all(
      Array.from({ length: units }, async (_, unit) => {
        await budget.pass();
        await work();
        ran.push({ unit, phase: timerPhases });
      }),
    );
  } finally {
    clearInterval(interval);
  }
  const perPhase = new Map<number, number>();
  for (const { phase } of ran) perPhase.set(phase, (perPhase.get(phase) ?? 0) + 1);
  return { ran, perPhase };
}

describe('TurnBudget', () => {
  it('lets the first unit of a turn run at once, without a promise', () => {
    expect(new TurnBudget().pass()).toBeUndefined();
  });

  it('spreads a burst of synchronous work over turns, timers running between the slices, in order', async () => {
    // 60 units of ≥ 1 ms, budget 5 ms: a turn holds at most a slice in its poll phase and one in its
    // check phase (≤ 2 × 5 units + the unit that crosses each line), so ≥ 5 timer phases interleave.
    const { ran, perPhase } = await burst(new TurnBudget({ budgetMs: 5 }), 60, async () => busy(1));
    expect(ran.map((r) => r.unit)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(Math.max(...perPhase.values())).toBeLessThanOrEqual(12);
    expect(perPhase.size).toBeGreaterThanOrEqual(5);
  });

  it('counts the work a unit does after awaits, not only its first synchronous step', async () => {
    // Each unit's 1 ms happens 20 microtask levels deep: released one at a time and measured after
    // all its microtasks, the slices stay as small as for synchronous work.
    const deep = async (levels: number): Promise<void> => {
      if (levels === 0) return busy(1);
      await null;
      return deep(levels - 1);
    };
    const { ran, perPhase } = await burst(new TurnBudget({ budgetMs: 5 }), 40, () => deep(20));
    expect(ran).toHaveLength(40);
    expect(Math.max(...perPhase.values())).toBeLessThanOrEqual(12);
  });

  it('lets work under way go before new work that waits, each in the order it asked', async () => {
    const budget = new TurnBudget({ budgetMs: 5 });
    const order: string[] = [];
    const unit = async (kind: 'admit' | 'pass', i: number) => {
      await (kind === 'admit' ? budget.admit() : budget.pass());
      busy(1);
      order.push(`${kind} ${i}`);
    };
    // The first new unit runs at once; the other 19 and then 3 units of work under way wait.
    const admits = Array.from({ length: 20 }, (_, i) => unit('admit', i));
    const passes = Array.from({ length: 3 }, (_, i) => unit('pass', i));
    await Promise.all([...admits, ...passes]);
    expect(order.slice(0, 5)).toEqual(['admit 0', 'pass 0', 'pass 1', 'pass 2', 'admit 1']);
    expect(order.filter((o) => o.startsWith('admit'))).toEqual(Array.from({ length: 20 }, (_, i) => `admit ${i}`));
  });

  it('refuses a budget that is not a positive number of milliseconds, naming it', () => {
    expect(() => new TurnBudget({ budgetMs: 0 })).toThrow(/budgetMs must be a positive/);
    expect(() => new TurnBudget({ budgetMs: Number.NaN })).toThrow(/budgetMs/);
  });
});
