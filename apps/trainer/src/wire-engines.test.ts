import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmptyBatchesError } from '@troupe/prime-rl/orchestrator';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from './default-config.ts';
import { readMetrics, train } from './run.ts';
import { applySet, readRunConfigFile } from './run-config.ts';
import { serveInference } from './serve-inference.ts';
import { serveTrainer } from './serve-trainer.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('wire engines (trainer process + inference server, in this process)', () => {
  // MaxRL on zero-sum Kuhn: the group mean reward is 0, so every advantage is 0 and every batch is
  // empty. prime-rl's orchestrator never ships an empty step: it rolls again for the same step and
  // stops after 10 empty batches in a row; nothing reaches the trainer process.
  it('never sends an empty step: rolls again for the same step, then stops naming zero advantages as the cause', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wire-engines-'));
    dirs.push(dir);
    const outputDir = join(dir, 'wire');
    const steps = 5;
    const abort = new AbortController();
    const trainer = serveTrainer({ outputDir, workerThread: false, signal: abort.signal }).then(
      () => 'returned',
      (error: unknown) => (abort.signal.aborted ? 'aborted' : Promise.reject(error)),
    );
    const server = await serveInference({ checkpoint: join(outputDir, 'broadcasts', 'step_0'), port: 0, maxTokens: 1 });
    try {
      const config = await readRunConfigFile(DEFAULT_CONFIG);
      for (const set of [
        `max_steps=${steps}`,
        'groups_per_step=2',
        'checkpoint_every=0',
        'train.source.0.group_size=2',
        'train.source.0.algorithm={"type":"max-rl"}',
        'trainer.worker_thread=false',
        'policy.d_model=8',
        'policy.heads=2',
        'policy.ffn_mult=1',
        `transport={"type":"filesystem","output_dir":${JSON.stringify(outputDir)}}`,
        `inference={"base_urls":[${JSON.stringify(server.baseUrl)}],"start_timeout_seconds":60}`,
      ])
        applySet(config, set);
      const lines: string[] = [];
      const error = await train({ config, out: join(dir, 'run'), log: (line) => lines.push(line) }).catch((e: unknown) => e);
      expect(EmptyBatchesError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ step: 1, consecutive: 10, reason: 'zero-advantages' });
      expect((error as Error).message).toMatch(/^step 1: 10 consecutive empty batches \(10 zero-advantages\)/);
      const empties = lines.filter((line) => /^step 1: empty batch after 4 episodes \(zero-advantages\); not sent/.test(line));
      expect(empties).toHaveLength(10);
      // No step reached the trainer process, and no step was recorded as trained.
      expect(await readdir(join(outputDir, 'rollouts')).catch(() => [])).toEqual([]);
      expect(await readMetrics(join(dir, 'run'))).toEqual([]);
      expect(server.version).toBe(0);
    } finally {
      abort.abort();
      await trainer;
      await server.close();
    }
  }, 300_000);
});
