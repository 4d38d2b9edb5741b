/**
 * Items an abort signal reaches, with one `abort` listener per signal: a run-long signal passed
 * to every call (the interception server's, a trainer's) would otherwise gather a listener or an
 * `AbortSignal.any` weak reference per call. Items are added while they need the abort and
 * removed when they no longer do; a signal that has already aborted is the caller's to handle
 * (its listener would never fire).
 */
export class AbortRelay<T> {
  private readonly items = new WeakMap<AbortSignal, Set<T>>();

  /** `onAbort` is called once per item still added when its signal aborts. */
  constructor(private readonly onAbort: (item: T, signal: AbortSignal) => void) {}

  /** Relays `signal`'s abort to `item` from now on. */
  add(signal: AbortSignal, item: T): void {
    let items = this.items.get(signal);
    if (!items) {
      const added = new Set<T>();
      items = added;
      this.items.set(signal, added);
      signal.addEventListener(
        'abort',
        () => {
          const reached = [...added];
          added.clear();
          for (const each of reached) this.onAbort(each, signal);
        },
        { once: true },
      );
    }
    items.add(item);
  }

  /** Stops relaying `signal`'s abort to `item`. */
  delete(signal: AbortSignal, item: T): void {
    this.items.get(signal)?.delete(item);
  }
}
