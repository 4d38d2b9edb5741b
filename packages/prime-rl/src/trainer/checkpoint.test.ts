import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keepMetricsThrough } from '../orchestrator/metrics-file.ts';
import {
  type Checkpoint,
  type CheckpointCommitStage,
  CheckpointError,
  commitCheckpoint,
  findRunCheckpoint,
  loadCheckpoint,
  readCheckpointFile,
  saveCheckpoint,
  writeCheckpointFiles,
} from './checkpoint.ts';

const dirs: string[] = [];
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'troupe-checkpoint-'));
  dirs.push(dir);
  return dir;
};
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function checkpointOf(step: number): Checkpoint {
  const weight = (name: string, value: number) => ({ name, shape: [2, 3], data: new Float32Array(6).fill(value) });
  return {
    step,
    state: { note: `step ${step}` },
    weights: [weight('w', step)],
    optimizer: { step, m: [weight('w', step / 10)], v: [weight('w', step / 100)] },
  };
}

const commit = (out: string, step: number, extra: Partial<Parameters<typeof commitCheckpoint>[0]> = {}) =>
  commitCheckpoint({ out, step, write: (dir) => writeCheckpointFiles({ dir, ...checkpointOf(step) }), ...extra });

/** Runs `work`, expecting it to fail with a CheckpointError whose path ends with `file`. */
async function expectRefused(work: Promise<unknown>, file: string, message: RegExp): Promise<void> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(CheckpointError.isInstance(error), String(error)).toBe(true);
  expect((error as CheckpointError).path.endsWith(file)).toBe(true);
  expect((error as Error).message).toMatch(message);
}

describe('commitCheckpoint (versioned directories behind an atomically swapped pointer)', () => {
  it('names each committed step through <out>/checkpoint, a relative symlink troupe made, and keeps the previous version', async () => {
    const out = await tempDir();
    for (const step of [1, 2, 3]) await commit(out, step);
    expect(await readlink(join(out, 'checkpoint'))).toBe('checkpoints/step-3');
    expect((await readdir(join(out, 'checkpoints'))).sort()).toEqual(['step-2', 'step-3']);
    const loaded = await loadCheckpoint({ dir: join(out, 'checkpoint') });
    expect(loaded.step).toBe(3);
    expect([...(loaded.weights[0]?.data ?? [])]).toEqual(Array(6).fill(3));
    const manifest = JSON.parse(await readFile(join(out, 'checkpoints/step-3/manifest.json'), 'utf8'));
    expect(Object.keys(manifest.files).sort()).toEqual(['meta.json', 'tensors.bin']);
    expect(manifest.files['tensors.bin'].bytes).toBe(18 * 4);
  });

  it('keeps a step named by a kept pointer (checkpoint-step-<N>) after later commits', async () => {
    const out = await tempDir();
    await commit(out, 1, { pointers: ['checkpoint', 'checkpoint-step-1'] });
    for (const step of [2, 3, 4]) await commit(out, step);
    expect((await loadCheckpoint({ dir: join(out, 'checkpoint-step-1') })).step).toBe(1);
    expect((await loadCheckpoint({ dir: join(out, 'checkpoint') })).step).toBe(4);
  });

  const stages: [CheckpointCommitStage, number][] = [
    ['files-written', 1],
    ['manifest-written', 1],
    ['version-named', 1],
    ['pointer-swapped', 2],
  ];
  for (const [stage, survivor] of stages) {
    it(`a crash at "${stage}" leaves <out>/checkpoint naming the complete step ${survivor}, and the next commit succeeds`, async () => {
      const out = await tempDir();
      await commit(out, 1);
      const crash = new Error(`crash at ${stage}`);
      await expect(
        commit(out, 2, {
          onStage: (at) => {
            if (at === stage) throw crash;
          },
        }),
      ).rejects.toBe(crash);
      expect(await findRunCheckpoint({ out })).toBe(join(out, 'checkpoint'));
      expect((await loadCheckpoint({ dir: join(out, 'checkpoint') })).step).toBe(survivor);
      // The resumed run writes step 2 again, over whatever the crash left.
      await commit(out, 2);
      expect((await loadCheckpoint({ dir: join(out, 'checkpoint') })).step).toBe(2);
    });
  }

  it('replaces a checkpoint directory of the layout before manifests, and a crash while moving it aside still resumes', async () => {
    const out = await tempDir();
    await mkdir(join(out, 'checkpoint'));
    await writeCheckpointFiles({ dir: join(out, 'checkpoint'), ...checkpointOf(1) });
    expect((await loadCheckpoint({ dir: join(out, 'checkpoint') })).step).toBe(1);
    const crash = new Error('crash');
    await expect(
      commit(out, 2, {
        onStage: (at) => {
          if (at === 'legacy-moved') throw crash;
        },
      }),
    ).rejects.toBe(crash);
    // No pointer for a moment: resume takes the newest complete version.
    const found = await findRunCheckpoint({ out });
    expect(found).toBe(join(out, 'checkpoints/step-2'));
    expect((await loadCheckpoint({ dir: found as string })).step).toBe(2);
    await commit(out, 3);
    expect((await lstat(join(out, 'checkpoint'))).isSymbolicLink()).toBe(true);
    expect((await readdir(join(out, 'checkpoints'))).filter((n) => !n.startsWith('.')).sort()).toEqual(['step-2', 'step-3']);
  });

  it('finds no checkpoint in a run directory that has none', async () => {
    expect(await findRunCheckpoint({ out: await tempDir() })).toBeNull();
  });
});

describe('loadCheckpoint (refuses what it cannot trust, naming the file)', () => {
  it('refuses tensors.bin overwritten in place (same size), by its checksum', async () => {
    const out = await tempDir();
    await commit(out, 1);
    await writeFile(join(out, 'checkpoints/step-1/tensors.bin'), new Uint8Array(18 * 4));
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'step-1/tensors.bin', /sha256 .* does not match/);
  });

  it('refuses a truncated tensors.bin and a truncated meta.json, by their sizes', async () => {
    const out = await tempDir();
    await commit(out, 1);
    await truncate(join(out, 'checkpoints/step-1/tensors.bin'), 10);
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'tensors.bin', /10 bytes, the manifest says 72/);
    await commit(out, 2);
    await truncate(join(out, 'checkpoints/step-2/meta.json'), 20);
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'step-2/meta.json', /20 bytes/);
  });

  it('refuses a missing file and a truncated manifest', async () => {
    const out = await tempDir();
    await commit(out, 1);
    await rm(join(out, 'checkpoints/step-1/tensors.bin'));
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'tensors.bin', /cannot be read \(ENOENT\)/);
    await commit(out, 2);
    await truncate(join(out, 'checkpoints/step-2/manifest.json'), 30);
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'manifest.json', /not JSON/);
  });

  it('checks a checkpoint without a manifest (older layout) by sizes: a truncated tensors.bin or meta.json is named', async () => {
    const dir = join(await tempDir(), 'checkpoint');
    await mkdir(dir);
    await writeCheckpointFiles({ dir, ...checkpointOf(1) });
    await truncate(join(dir, 'tensors.bin'), 40);
    await expectRefused(loadCheckpoint({ dir }), 'tensors.bin', /40 bytes, meta.json's tensors need 72/);
    await truncate(join(dir, 'meta.json'), 25);
    await expectRefused(loadCheckpoint({ dir }), 'meta.json', /not JSON/);
    await writeFile(join(dir, 'meta.json'), '{"kind":"troupe-checkpoint","version":2}');
    await expectRefused(loadCheckpoint({ dir }), 'meta.json', /not a troupe checkpoint of version 1 \(version:/);
  });

  it('does not follow a symlink troupe did not create: a pointer elsewhere, a linked file, a linked checkpoints folder', async () => {
    const out = await tempDir();
    const elsewhere = await tempDir();
    await saveCheckpoint({ dir: join(elsewhere, 'secret'), ...checkpointOf(9) });
    await symlink(join(elsewhere, 'secret'), join(out, 'checkpoint'));
    await expectRefused(loadCheckpoint({ dir: join(out, 'checkpoint') }), 'checkpoint', /a symlink troupe did not create/);
    await rm(join(out, 'checkpoint'));
    await commit(out, 1);
    await rm(join(out, 'checkpoints/step-1/meta.json'));
    await symlink(join(elsewhere, 'secret/meta.json'), join(out, 'checkpoints/step-1/meta.json'));
    await expectRefused(
      loadCheckpoint({ dir: join(out, 'checkpoint') }),
      'meta.json',
      /a symlink; checkpoint files are never followed/,
    );
    const other = await tempDir();
    await symlink(join(out, 'checkpoints'), join(other, 'checkpoints'));
    await symlink('checkpoints/step-1', join(other, 'checkpoint'));
    await expectRefused(loadCheckpoint({ dir: join(other, 'checkpoint') }), 'checkpoints', /not a directory \(a symlink\)/);
  });

  it('refuses a FIFO in place of a checkpoint file without blocking', async () => {
    const out = await tempDir();
    await commit(out, 1);
    await rm(join(out, 'checkpoints/step-1/tensors.bin'));
    execFileSync('mkfifo', [join(out, 'checkpoints/step-1/tensors.bin')]);
    await expectRefused(
      readCheckpointFile({ dir: join(out, 'checkpoint'), name: 'tensors.bin' }),
      'tensors.bin',
      /not a regular file \(a FIFO\)/,
    );
  });
});

describe('keepMetricsThrough (metrics.jsonl cut to the resumed checkpoint)', () => {
  const line = (step: number) => `${JSON.stringify({ step, loss: step / 10 })}\n`;

  it('cuts at the first later step and drops a line torn by a crash; earlier lines stay byte for byte, unparsable ones too', async () => {
    const path = join(await tempDir(), 'metrics.jsonl');
    const kept = `${line(1)}not json, but not ours to delete\n${line(2)}${line(3)}`;
    await writeFile(path, `${kept}${line(4)}${line(5)}{"step":6,"lo`);
    await keepMetricsThrough(path, 3);
    expect(await readFile(path, 'utf8')).toBe(kept);
    await writeFile(path, `${kept}{"step":4,"lo`);
    await keepMetricsThrough(path, 3);
    expect(await readFile(path, 'utf8')).toBe(kept);
  });

  it('refuses a symlinked or FIFO metrics.jsonl, and creates a missing one', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'target'), line(1));
    await symlink(join(dir, 'target'), join(dir, 'metrics.jsonl'));
    await expect(keepMetricsThrough(join(dir, 'metrics.jsonl'), 0)).rejects.toThrow(/metrics.jsonl: a symlink/);
    expect(await readFile(join(dir, 'target'), 'utf8')).toBe(line(1));
    execFileSync('mkfifo', [join(dir, 'fifo.jsonl')]);
    await expect(keepMetricsThrough(join(dir, 'fifo.jsonl'), 0)).rejects.toThrow(/fifo.jsonl: not a regular file/);
    await keepMetricsThrough(join(dir, 'fresh.jsonl'), 0);
    expect(await readFile(join(dir, 'fresh.jsonl'), 'utf8')).toBe('');
  });
});
