import { ConfigError } from '../errors/troupe-error.ts';
/**
 * Spreads bursts of synchronous work over event-loop turns. Each unit of work asks `pass()` before
 * it runs: while the current turn has spent less than `budgetMs` since its first unit, the work
 * runs in this turn; past that, it waits (first come, first served) for a later turn, so timers
 * and I/O run between the slices. A thousand requests that land in one poll phase, or a thousand
 * episodes started in one call, then cost the loop slices of about `budgetMs` each instead of
 * one stall as long as all of them together.
 *
 * Work is let through one unit at a time, and the clock is read again only after that unit's
 * microtasks have all run (an `await` chain runs many levels deep before it reaches real I/O), so
 * the budget counts what the work really did, not only its first synchronous step. A turn's slice
 * ends at the turn's check phase (a `setImmediate`); waiting work is released there and in the
 * check phases after it. Nothing is dropped: work runs in the order it asked, except that new
 * work (`admit`, e.g. starting an episode) waits while work already under way (`pass`, e.g. the
 * reply to an episode's model call) does: finishing what is in flight comes before taking more.
 */
export class TurnBudget {
  private readonly budgetMs: number;
  /** When the current turn's slice started (`performance.now()`), or -1 between slices. */
  private sliceStart = -1;
  /** Work under way, then new work; each first come, first served. */
  private readonly queues = { inFlight: new Waiting(), admit: new Waiting() };
  /** A unit was let through and its microtasks have not all run yet. */
  private unmeasured = false;
  /** `release` is queued with `setImmediate`. */
  private releaseQueued = false;

  constructor(options: { budgetMs?: number } = {}) {
    const budgetMs = options.budgetMs ?? 10;
    if (!(budgetMs > 0) || !Number.isFinite(budgetMs)) {
      throw new ConfigError(`TurnBudget: budgetMs must be a positive, finite number of milliseconds (got ${budgetMs})`);
    }
    this.budgetMs = budgetMs;
  }

  /** Units of work waiting for their turn. */
  get waitingCount(): number {
    return this.queues.inFlight.size + this.queues.admit.size;
  }

  /**
   * For work under way. `undefined` when it may run now (no promise on the fast path); otherwise a
   * promise that resolves, in this turn or a later one, after the work under way that asked before it.
   */
  pass(): Promise<void> | undefined {
    return this.ask(this.queues.inFlight);
  }

  /** For new work: as `pass`, but it also waits while any work under way waits. */
  admit(): Promise<void> | undefined {
    return this.ask(this.queues.admit);
  }

  private ask(queue: Waiting): Promise<void> | undefined {
    const now = this.now();
    const ahead = queue === this.queues.inFlight ? queue.size : this.waitingCount;
    if (ahead === 0 && !this.unmeasured && !this.releaseQueued && now - this.sliceStart < this.budgetMs) {
      this.letThrough();
      return undefined;
    }
    return new Promise<void>((resolve) => {
      queue.push(resolve);
      // A unit being measured continues the release when its microtasks are done.
      if (!this.unmeasured && !this.releaseQueued) this.queueRelease();
    });
  }

  /** `performance.now()`, starting the turn's slice if none is open. */
  private now(): number {
    const now = performance.now();
    if (this.sliceStart < 0) {
      this.sliceStart = now;
      setImmediate(this.endSlice);
    }
    return now;
  }

  private letThrough(): void {
    this.unmeasured = true;
    // After the current microtask (the released unit's continuation is queued before it) a tick
    // is queued; ticks run once the microtask queue is empty, so `measured` sees all the work.
    queueMicrotask(this.queueMeasured);
  }

  private readonly queueMeasured = (): void => {
    process.nextTick(this.measured);
  };

  private readonly measured = (): void => {
    this.unmeasured = false;
    if (this.waitingCount > 0) this.release();
  };

  private readonly endSlice = (): void => {
    this.sliceStart = -1;
  };

  private queueRelease(): void {
    this.releaseQueued = true;
    setImmediate(this.releaseFromImmediate);
  }

  private readonly releaseFromImmediate = (): void => {
    this.releaseQueued = false;
    this.release();
  };

  /** Lets the next waiting unit through if the turn has budget left, else queues for a later check phase. */
  private release(): void {
    if (this.waitingCount === 0) return;
    if (this.now() - this.sliceStart >= this.budgetMs) {
      this.queueRelease();
      return;
    }
    const queue = this.queues.inFlight.size > 0 ? this.queues.inFlight : this.queues.admit;
    const resolve = queue.shift();
    this.letThrough();
    resolve();
  }
}

/** A first-come-first-served queue of waiting units (an array and a read index, compacted as it goes). */
class Waiting {
  private readonly items: (() => void)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(resolve: () => void): void {
    this.items.push(resolve);
  }

  shift(): () => void {
    const resolve = this.items[this.head] as () => void;
    this.head++;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return resolve;
  }
}

/**
 * The process's turn budget: one event loop, one budget, shared by the eval runner (episode starts
 * and writes) and the interception server (requests and replies), so their bursts add up to one
 * slice per turn rather than one each.
 */
export const turnBudget = new TurnBudget();
