import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Episode } from '../trace/episode.ts';
import { Trace } from '../trace/trace.ts';
import { chunksLength, jsonChunks } from './json-chunks.ts';
import { EpisodeWriter, readEpisodes } from './traces-file.ts';

function episodeWith(key: string, texts: string[]): Episode {
  const episode = new Episode({ env: { id: 'e' }, task: { key, hash: 'h', data: {} }, group: { id: key, index: 0 } });
  const trace = new Trace({ task: { key, hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
  let parent: number | null = null;
  for (const text of texts) parent = trace.addMessage({ role: 'user', content: text }, parent);
  trace.recordReward('correct', 1);
  trace.stop('agent_completed');
  episode.traces.push(trace);
  return episode;
}

describe('jsonChunks', () => {
  it('joins to exactly JSON.stringify, for episodes and for values with toJSON, undefined, functions and non-finite numbers', () => {
    const values: unknown[] = [
      episodeWith('t', ['a', 'b "quoted"\n', '\u0001\ud800']),
      {
        a: undefined,
        b: () => 1,
        c: [undefined, () => 2, Symbol('s'), Number.NaN, -0],
        d: new Date(0),
        e: { toJSON: () => 'x' },
      },
      [1, 'two', null, true, { nested: [[[{ deep: [1] }]]] }],
      'plain',
      42,
      null,
    ];
    for (const value of values) {
      for (const depth of [0, 1, 3, 5, 9])
        expect(jsonChunks(value, { depth, chunkChars: 8 }).join('')).toBe(JSON.stringify(value));
    }
    expect(jsonChunks(undefined)).toEqual([]);
  });

  it('never builds a piece larger than the largest value at its depth (one message of a trace)', () => {
    const episode = episodeWith(
      't',
      Array.from({ length: 20 }, (_, i) => `${i}${'m'.repeat(100_000)}`),
    );
    const chunks = jsonChunks(episode, { chunkChars: 1024 });
    expect(chunksLength(chunks)).toBe(JSON.stringify(episode).length);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThan(110_000);
  });
});

describe('EpisodeWriter', () => {
  it('writes an episode too large for one line as a failed stand-in naming its size; its siblings are written whole', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-writer-'));
    const path = join(dir, 'traces.jsonl');
    const writer = new EpisodeWriter(path, { maxLineBytes: 500_000 });
    const small = episodeWith('small-a', ['hello']);
    const huge = episodeWith(
      'huge',
      Array.from({ length: 20 }, (_, i) => `${i}${'x'.repeat(30_000)}`),
    );
    const after = episodeWith('small-b', ['bye']);
    expect(writer.write(small)).toBeNull();
    const refused = writer.write(huge);
    expect(writer.write(after)).toBeNull();
    writer.close();
    expect(refused).toMatchObject({ type: 'LimitError', stage: 'write' });
    expect(refused?.message).toMatch(/is \d+ bytes as one line, over the 500000/);
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(3);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(500_000);
    const { episodes, badLines } = readEpisodes(path);
    expect(badLines).toEqual([]);
    expect(episodes.map((e) => [e.task.key, e.ok])).toEqual([
      ['small-a', true],
      ['huge', false],
      ['small-b', true],
    ]);
    const stand = episodes[1] as Episode;
    expect(stand.errors[0]?.type).toBe('LimitError');
    expect(stand.traces[0]?.nodes).toEqual([]);
    expect(stand.traces[0]?.rewards).toEqual({ correct: { score: 1, weight: 1 } });
    expect(lines[0]).toBe(JSON.stringify(small));
  });
});
