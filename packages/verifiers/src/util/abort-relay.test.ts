import { describe, expect, it } from 'vitest';
import { AbortRelay } from './abort-relay.ts';

describe('AbortRelay', () => {
  it('reaches each item still added, once, with one listener per signal', () => {
    const reached: string[] = [];
    const relay = new AbortRelay<string>((item, signal) => reached.push(`${item}:${String(signal.reason)}`));
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    relay.add(controller.signal, 'a');
    relay.add(controller.signal, 'b');
    relay.add(controller.signal, 'c');
    relay.delete(controller.signal, 'b');
    expect(listeners).toBe(1);
    controller.abort('stop');
    controller.abort('again');
    expect(reached).toEqual(['a:stop', 'c:stop']);
  });

  it('reaches every item added when the signal aborted, even one deleted while the abort is relayed', () => {
    const controller = new AbortController();
    const reached: number[] = [];
    const relay: AbortRelay<number> = new AbortRelay<number>((item, signal) => {
      reached.push(item);
      relay.delete(signal, item);
      relay.delete(signal, 3);
    });
    for (const item of [1, 2, 3]) relay.add(controller.signal, item);
    controller.abort();
    expect(reached).toEqual([1, 2, 3]);
  });
});
