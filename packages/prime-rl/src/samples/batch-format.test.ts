import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseBatch, readBatch, serializeBatch, writeBatch } from './batch-format.ts';
import type { TrainingSample } from './training-sample.ts';

const sample: TrainingSample = {
  tokenIds: [1, 2, 3],
  mask: [false, true, true],
  logprobs: [0, -0.25, -1.5],
  advantages: [0, 0.5, 0.5],
  env: 'kuhn-poker',
  role: 'player0',
  traceId: 't1',
  episodeId: 'e1',
  branch: 0,
};

describe('batch format (troupe.batch v1, JSONL)', () => {
  let directory = '';
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'troupe-batch-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('writes a header line then one sample per line, and reads it back', async () => {
    const path = join(directory, 'step-3', 'batch.jsonl');
    const createdAt = new Date('2026-01-02T03:04:05.000Z');
    await writeBatch({ path, samples: [sample, sample], step: 3, meta: { algorithm: 'rae' }, createdAt });
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0]!)).toEqual({
      format: 'troupe.batch',
      version: 1,
      numSamples: 2,
      step: 3,
      createdAt: '2026-01-02T03:04:05.000Z',
      meta: { algorithm: 'rae' },
    });
    const batch = await readBatch({ path });
    expect(batch.samples).toEqual([sample, sample]);
    expect(batch.header.step).toBe(3);
  });

  it('names the line and the field of a bad sample', async () => {
    const lines = serializeBatch({ samples: [sample, sample] }).split('\n');
    lines[2] = JSON.stringify({ ...sample, advantages: [0, 'x', 0.5] });
    const text = lines.join('\n');
    const path = join(directory, 'bad.jsonl');
    await writeFile(path, text);
    await expect(readBatch({ path })).rejects.toThrow(/bad\.jsonl line 3: sample\.advantages\[1\]: .*number/);
  });

  it('checks that per-token arrays have the same length', () => {
    const text = serializeBatch({ samples: [{ ...sample, mask: [true] }] });
    expect(() => parseBatch({ text, source: 'x' })).toThrow(/x line 2: sample\.mask: has 1 entries but tokenIds has 3/);
  });

  it('refuses a file without the versioned header, or with the wrong sample count', () => {
    expect(() => parseBatch({ text: `${JSON.stringify(sample)}\n` })).toThrow(
      /line 1: not a troupe\.batch v1 header: header\.format/,
    );
    const v2 = serializeBatch({ samples: [] }).replace('"version":1', '"version":2');
    expect(() => parseBatch({ text: v2 })).toThrow(/header\.version/);
    const short = serializeBatch({ samples: [sample] }).split('\n')[0]!;
    expect(() => parseBatch({ text: short })).toThrow(/numSamples is 1 but 0 sample lines/);
    expect(() => parseBatch({ text: '' })).toThrow(/empty/);
    expect(() => parseBatch({ text: `${short}\n{oops\n` })).toThrow(/line 2: not JSON/);
  });
});
