import { describe, expect, it } from 'vitest';
import { ExecOutputCollector } from './exec-pid-wrapper.ts';

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
