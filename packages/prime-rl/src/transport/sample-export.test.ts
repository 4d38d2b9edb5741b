import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packAndEncode } from './encode-planned.ts';
import { FilesystemRolloutSender } from './filesystem.ts';
import type { WireSample } from './micro-batch.ts';
import { prepareBatch } from './prepare-batch.ts';
import {
  parseSampleExport,
  readSampleExport,
  sampleExportPath,
  serializeSampleExport,
  writeSampleExport,
} from './sample-export.ts';

const sample: WireSample = {
  tokenIds: [1, 2, 3, 4],
  mask: [false, true, true, false],
  logprobs: [0, -0.25, -1.5, 0],
  temperatures: [1, 0.7, 0.7, 1],
  envName: 'kuhn-poker',
  advantages: [0, 0.5, 0.5, 0],
  provenance: { role: 'player0', traceId: 't1', episodeId: 'e1', branch: 0 },
};

/** A step of varied samples: one temperature or per-token temperatures, optional streams, no advantages on an untrained one. */
function stepSamples(count: number): WireSample[] {
  return Array.from({ length: count }, (_, i) => {
    const length = 3 + ((i * 17) % 41);
    const prompt = Math.floor(length / 2);
    const trains = i % 4 !== 3;
    return {
      tokenIds: Array.from({ length }, (_, t) => 2 + ((i * 7 + t) % 50)),
      mask: Array.from({ length }, (_, t) => trains && t >= prompt),
      logprobs: Array.from({ length }, (_, t) => (t >= prompt ? -0.125 * ((t % 5) + 1) : 0)),
      temperatures: i % 2 ? 0.9 : Array.from({ length }, (_, t) => (t >= prompt ? 0.6 + (t % 2) * 0.2 : 1)),
      envName: i % 3 ? 'kuhn-poker' : 'proposer-solver',
      ...(trains ? { advantages: Array.from({ length }, (_, t) => (t >= prompt ? (i % 5) - 2 + 0.5 : 0)) } : {}),
      ...(i % 5 === 0 ? { refLogprobs: Array.from({ length }, () => -0.75) } : {}),
      provenance: { role: i % 2 ? 'player1' : 'player0', traceId: `t${i}`, episodeId: `e${i >> 1}`, branch: 0 },
    };
  });
}

describe('sample export (troupe.batch v2: the wire samples before packing, as JSONL)', () => {
  let directory = '';
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'troupe-export-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("writes a header then prime-rl's TrainingSample per line, and reads it back", async () => {
    const path = sampleExportPath({ outputDir: directory, step: 3 });
    expect(path).toBe(join(directory, 'samples', 'step_3.jsonl'));
    const createdAt = new Date('2026-01-02T03:04:05.000Z');
    const oneTemperature = { ...sample, temperatures: 0.8 };
    await writeSampleExport({ path, samples: [sample, oneTemperature], step: 3, meta: { algorithm: 'rae' }, createdAt });
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0]!)).toEqual({
      format: 'troupe.batch',
      version: 2,
      numSamples: 2,
      step: 3,
      createdAt: '2026-01-02T03:04:05.000Z',
      meta: { algorithm: 'rae' },
    });
    expect(JSON.parse(lines[2]!)).toEqual({
      token_ids: [1, 2, 3, 4],
      mask: [false, true, true, false],
      logprobs: [0, -0.25, -1.5, 0],
      temperatures: [0.8, 0.8, 0.8, 0.8],
      env_name: 'kuhn-poker',
      advantages: [0, 0.5, 0.5, 0],
      troupe: { role: 'player0', trace_id: 't1', episode_id: 'e1', branch: 0 },
    });
    const back = await readSampleExport({ path });
    expect(back.header.step).toBe(3);
    expect(back.samples).toEqual([sample, { ...sample, temperatures: [0.8, 0.8, 0.8, 0.8] }]);
  });

  it('packs back to the very bytes of the rank files: the export holds the samples the wire carries', async () => {
    const samples = stepSamples(60);
    const options = { seqLen: 32, dataWorldSize: 3, padToMultipleOf: 4 };
    const sent = packAndEncode({ samples, ...options });
    const back = parseSampleExport({ text: serializeSampleExport({ samples, step: 1 }) }).samples;
    const again = prepareBatch({ samples: back, ...options });
    await new FilesystemRolloutSender({ outputDir: directory, dataWorldSize: 3 }).send({ step: 1, microBatches: again });
    for (let rank = 0; rank < 3; rank++) {
      const file = await readFile(join(directory, 'rollouts', 'step_1', `rank_${rank}.bin`));
      expect(Buffer.from(sent[rank]!).equals(file), `rank ${rank}`).toBe(true);
    }
  });

  it('names the line and the field of a bad sample, and refuses the old v1 with a reason', async () => {
    const lines = serializeSampleExport({ samples: [sample, sample] }).split('\n');
    lines[2] = lines[2]!.replace('"advantages":[0,0.5', '"advantages":[0,"x"');
    const path = join(directory, 'bad.jsonl');
    await writeFile(path, lines.join('\n'));
    await expect(readSampleExport({ path })).rejects.toThrow(/bad\.jsonl line 3: sample\.advantages\[1\]: .*number/);

    const short = serializeSampleExport({ samples: [{ ...sample, temperatures: [1, 1] }] });
    expect(() => parseSampleExport({ text: short, source: 'x' })).toThrow(
      /x line 2: sample\.temperatures: has 2 entries but token_ids has 4/,
    );
    const all = serializeSampleExport({ samples: [{ ...sample, envName: 'all' }] });
    expect(() => parseSampleExport({ text: all, source: 'x' })).toThrow(/x line 2: sample\.env_name: "all" is reserved/);
    const v1 = `${JSON.stringify({ format: 'troupe.batch', version: 1, numSamples: 0, createdAt: 'now' })}\n`;
    expect(() => parseSampleExport({ text: v1, source: 'old.jsonl' })).toThrow(
      /old\.jsonl line 1: troupe\.batch v1 .* no longer read/,
    );
    const counted = serializeSampleExport({ samples: [sample] }).replace('"numSamples":1', '"numSamples":2');
    expect(() => parseSampleExport({ text: counted, source: 'x' })).toThrow(/header\.numSamples is 2 but 1 sample lines follow/);
  });
});
