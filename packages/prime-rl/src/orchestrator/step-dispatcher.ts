import { TrainerError } from '@troupe/verifiers';

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

/** Options of {@link StepDispatcher}. */
export interface StepDispatcherOptions<T> {
  /** The step the run starts after (0, or the resumed checkpoint's step). */
  start: number;
  maxSteps: number;
  /** Steps the collections may run ahead of the trainer (0 = on-policy). */
  maxAsync: number;
  /**
   * The oldest policy version a step may play at (default max(0, `start` − `maxAsync`)): a
   * resumed run whose checkpoint holds only the weights of its own step plays from that step on.
   */
  firstVersion?: number;
  /** Plays the episodes of `step` at policy `version`. */
  play(options: { step: number; version: number }): Promise<T>;
}

/**
 * The collecting side of the orchestrator: the episodes of steps `start + 1 … maxSteps` play one
 * after another from construction on, step m waiting until the trainer has finished step
 * m − 1 − `maxAsync` and playing at policy version max(0, m − 1 − `maxAsync`). The training loop
 * takes each with {@link take} and reports each trained step with {@link trainerDone}. A step whose
 * episodes gave no sample asks for another collection with {@link again}: it plays next, before any
 * step still waiting for the trainer, at the newest version the trainer has. Versions never go back:
 * a collection plays at least at the version of the one before. A collection that throws rejects its
 * step and every later one; {@link stop} ends the loop and waits for it.
 */
export class StepDispatcher<T> {
  private readonly ready: (Deferred<T> | undefined)[];
  private readonly extras: { step: number; result: Deferred<T> }[] = [];
  private trainerStep: number;
  private lastVersion = 0;
  private signal = deferred<void>();
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(options: StepDispatcherOptions<T>) {
    this.ready = Array.from({ length: options.maxSteps + 1 }, () => deferred<T>());
    this.trainerStep = options.start;
    this.lastVersion = Math.max(0, options.start - options.maxAsync, options.firstVersion ?? 0);
    this.loop = this.dispatch(options);
  }

  /** The episodes of `step`, released once taken (a 700-step run held them all and ran out of heap). */
  async take(step: number): Promise<T> {
    const episodes = await (this.ready[step] as Deferred<T>).promise;
    this.ready[step] = undefined;
    return episodes;
  }

  /**
   * One more collection for `step`, whose episodes gave no training sample (prime-rl keeps collecting
   * for the same step: `src/prime_rl/orchestrator/orchestrator.py:640-652` at 559b447). It plays
   * after the collection in flight, at the version of the last step the trainer finished.
   */
  again(step: number): Promise<T> {
    const result = deferred<T>();
    if (this.stopped)
      result.reject(new TrainerError(`step dispatcher stopped before step ${step} could be collected again`, { step }));
    else this.extras.push({ step, result });
    this.notify();
    return result.promise;
  }

  /** The trainer finished `step`: wakes the steps waiting for it. */
  trainerDone(step: number): void {
    this.trainerStep = step;
    this.notify();
  }

  /** Starts no further collection, releases the waiting one and waits for the loop to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.notify();
    await this.loop;
  }

  private notify(): void {
    const signal = this.signal;
    this.signal = deferred<void>();
    signal.resolve();
  }

  private async playAt(options: StepDispatcherOptions<T>, step: number, version: number): Promise<T> {
    this.lastVersion = Math.max(this.lastVersion, version);
    return options.play({ step, version: this.lastVersion });
  }

  private async dispatch(options: StepDispatcherOptions<T>): Promise<void> {
    const { start, maxSteps, maxAsync } = options;
    let m = start + 1;
    for (;;) {
      // Wait for: a step to roll again, the trainer reaching step m's version, or stop.
      while (!this.stopped && this.extras.length === 0 && !(m <= maxSteps && this.trainerStep >= m - 1 - maxAsync))
        await this.signal.promise;
      if (this.stopped) break;
      const extra = this.extras.shift();
      try {
        if (extra) extra.result.resolve(await this.playAt(options, extra.step, this.trainerStep));
        else this.ready[m]?.resolve(await this.playAt(options, m, Math.max(0, m - 1 - maxAsync)));
      } catch (error) {
        extra?.result.reject(error);
        for (let k = m; k <= maxSteps; k++) this.ready[k]?.reject(error);
        for (const other of this.extras.splice(0)) other.result.reject(error);
        return;
      }
      if (!extra) m++;
    }
    const stopped = new TrainerError('step dispatcher stopped');
    for (const other of this.extras.splice(0)) other.result.reject(stopped);
  }
}
