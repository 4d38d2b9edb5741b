import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExecOutputCollector, guardExec } from './exec-pid-wrapper.ts';

function write(collector: ExecOutputCollector, chunks: Buffer[]): Promise<void> {
  return new Promise((resolve, reject) => {
    for (const chunk of chunks) collector.write(chunk);
    collector.end((error?: Error | null) => (error ? reject(error) : resolve()));
  });
}

describe('ExecOutputCollector', () => {
  it('keeps everything under the limit and is not truncated', async () => {
    const collector = new ExecOutputCollector(100);
    await write(collector, [Buffer.from('hello '), Buffer.from('world')]);
    expect(collector.text()).toBe('hello world');
    expect(collector.bytes().length).toBe(11);
    expect(collector.truncated).toBe(false);
  });

  it('keeps only the first `limit` bytes and marks the stream truncated', async () => {
    const collector = new ExecOutputCollector(4);
    await write(collector, [Buffer.from('abc'), Buffer.from('defg'), Buffer.from('h')]);
    expect(collector.bytes().toString('utf8')).toBe('abcd');
    expect(collector.truncated).toBe(true);
  });

  it('streams every chunk to onChunk, joining a character split across chunks', async () => {
    const seen: string[] = [];
    const euro = Buffer.from('€'); // 3 bytes
    const collector = new ExecOutputCollector(2, (chunk) => seen.push(chunk));
    await write(collector, [Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]), euro.subarray(1), Buffer.from('b')]);
    expect(seen.join('')).toBe('a€b');
    expect(collector.truncated).toBe(true);
  });

  it('text() hands a trailing incomplete character to onChunk; bytes() does not', async () => {
    const fromText: string[] = [];
    const viaText = new ExecOutputCollector(100, (chunk) => fromText.push(chunk));
    await write(viaText, [Buffer.from('x'), Buffer.from('€').subarray(0, 2)]);
    viaText.text();
    expect(fromText).toEqual(['x', '\uFFFD']);

    const fromBytes: string[] = [];
    const viaBytes = new ExecOutputCollector(100, (chunk) => fromBytes.push(chunk));
    await write(viaBytes, [Buffer.from('x'), Buffer.from('€').subarray(0, 2)]);
    viaBytes.bytes();
    expect(fromBytes).toEqual(['x']);
  });
});

describe('guardExec', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('kills once the timeout passes and reports timedOut (not aborted)', () => {
    vi.useFakeTimers();
    const kill = vi.fn();
    const guard = guardExec({ timeoutMs: 5_000, kill });
    vi.advanceTimersByTime(4_999);
    expect(kill).not.toHaveBeenCalled();
    expect(guard.timedOut).toBe(false);
    vi.advanceTimersByTime(1);
    expect(kill).toHaveBeenCalledTimes(1);
    expect(guard.timedOut).toBe(true);
    expect(guard.aborted).toBe(false);
    guard.dispose();
  });

  it('kills on abort and reports aborted (not timedOut)', () => {
    const controller = new AbortController();
    const kill = vi.fn();
    const guard = guardExec({ signal: controller.signal, kill });
    controller.abort();
    expect(kill).toHaveBeenCalledTimes(1);
    expect(guard.aborted).toBe(true);
    expect(guard.timedOut).toBe(false);
    guard.dispose();
  });

  it('after dispose, neither the timer nor the signal kills', () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const kill = vi.fn();
    const guard = guardExec({ timeoutMs: 10, signal: controller.signal, kill });
    guard.dispose();
    vi.advanceTimersByTime(1_000);
    controller.abort();
    expect(kill).not.toHaveBeenCalled();
    expect(guard.timedOut).toBe(false);
    expect(guard.aborted).toBe(false);
  });
});
