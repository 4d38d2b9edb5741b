interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** Options of {@link RolloutDispatcher}. */
export interface RolloutDispatcherOptions<T> {
  /** The step the run starts after (0, or the resumed checkpoint's step). */
  start: number;
  maxSteps: number;
  /** Steps the rollouts may run ahead of the trainer (0 = on-policy). */
  maxAsync: number;
  /** Plays the rollout of `step` at policy `version`. */
  play(options: { step: number; version: number }): Promise<T>;
}

/**
 * The rollout side of the orchestrator: the rollouts of steps `start + 1 … maxSteps` run one after
 * another from construction on, rollout m waiting until the trainer has finished step
 * m − 1 − `maxAsync` and playing at policy version max(0, m − 1 − `maxAsync`). The training loop
 * takes each with {@link take} and reports each trained step with {@link trainerDone}. A rollout
 * that throws rejects its step and every later one; {@link stop} ends the loop and waits for it.
 */
export class RolloutDispatcher<T> {
  private readonly ready: (Deferred<T> | undefined)[];
  private trainerStep: number;
  private waiters: { target: number; resolve: () => void }[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(options: RolloutDispatcherOptions<T>) {
    this.ready = Array.from({ length: options.maxSteps + 1 }, () => deferred<T>());
    this.trainerStep = options.start;
    this.loop = this.dispatch(options);
  }

  /** The rollout of `step`, released once taken (a 700-step run held them all and ran out of heap). */
  async take(step: number): Promise<T> {
    const rollout = await (this.ready[step] as Deferred<T>).promise;
    this.ready[step] = undefined;
    return rollout;
  }

  /** The trainer finished `step`: wakes the rollouts waiting for it. */
  trainerDone(step: number): void {
    this.trainerStep = step;
    const woken = this.waiters.filter((w) => w.target <= step);
    this.waiters = this.waiters.filter((w) => w.target > step);
    for (const w of woken) w.resolve();
  }

  /** Starts no further rollout, releases the waiting one and waits for the loop to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.trainerStep = Number.POSITIVE_INFINITY;
    for (const w of this.waiters) w.resolve();
    await this.loop;
  }

  private untilTrainerStep(target: number): Promise<void> {
    return this.trainerStep >= target
      ? Promise.resolve()
      : new Promise<void>((resolve) => this.waiters.push({ target, resolve }));
  }

  private async dispatch({ start, maxSteps, maxAsync, play }: RolloutDispatcherOptions<T>): Promise<void> {
    for (let m = start + 1; m <= maxSteps && !this.stopped; m++) {
      try {
        await this.untilTrainerStep(m - 1 - maxAsync);
        this.ready[m]?.resolve(await play({ step: m, version: Math.max(0, m - 1 - maxAsync) }));
      } catch (error) {
        for (let k = m; k <= maxSteps; k++) this.ready[k]?.reject(error);
        return;
      }
    }
  }
}
