import { readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDirs } from './__fixtures__/temp-dirs.ts';
import { tinyKuhn } from './__fixtures__/tiny-runs.ts';
import { readMetrics, train } from './run.ts';

const tempDir = tempDirs('troupe-resume-');

describe('train --resume (crash-safe checkpoints)', () => {
  it('refuses to start fresh when there is no checkpoint, and leaves metrics.jsonl as it was', async () => {
    const out = await tempDir();
    const metrics = `${JSON.stringify({ step: 1 })}\n${JSON.stringify({ step: 2 })}\n`;
    await writeFile(join(out, 'metrics.jsonl'), metrics);
    await expect(train({ config: await tinyKuhn(), out, resume: true })).rejects.toThrow(
      /--resume: no checkpoint in .*run without --resume to start this run fresh/,
    );
    expect(await readFile(join(out, 'metrics.jsonl'), 'utf8')).toBe(metrics);
  });

  it('resumes from the complete checkpoint a crash left without a pointer, keeping the metrics up to its step', async () => {
    const out = await tempDir();
    await train({ config: await tinyKuhn(), out });
    expect(await readlink(join(out, 'checkpoint'))).toBe('checkpoints/step-2');
    // As if killed while a legacy checkpoint directory was moved aside: no pointer, complete versions on disk.
    await rm(join(out, 'checkpoint'));
    const resumed = await train({ config: await tinyKuhn(['max_steps=3']), out, resume: true });
    expect(resumed.steps).toBe(3);
    expect((await readMetrics(out)).map((m) => m.step)).toEqual([1, 2, 3]);
  });

  it('refuses a checkpoint whose weights were overwritten, naming tensors.bin, and changes nothing', async () => {
    const out = await tempDir();
    await train({ config: await tinyKuhn(), out });
    const tensors = join(out, 'checkpoints/step-2/tensors.bin');
    const bytes = await readFile(tensors);
    bytes[0] = (bytes[0] ?? 0) ^ 0xff;
    await writeFile(tensors, bytes);
    const before = await readFile(join(out, 'metrics.jsonl'), 'utf8');
    await expect(train({ config: await tinyKuhn(['max_steps=3']), out, resume: true })).rejects.toThrow(
      /checkpoints\/step-2\/tensors\.bin: sha256 .* does not match the manifest/,
    );
    expect(await readFile(join(out, 'metrics.jsonl'), 'utf8')).toBe(before);
  });
});
