import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  // empty. Rollout m is sampled by version m − 2, whose broadcast exists only once the trainer
  // process got step m − 2: the skipped steps must reach it before the servers wait for them.
  it('sends the steps the orchestrator skipped (empty batches), so the next rollout is not waiting for their weights', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wire-engines-'));
    dirs.push(dir);
    const outputDir = join(dir, 'wire');
    const steps = 5;
    const abort = new AbortController();
    // Not `forever`: the trainer process returns once it has trained the run's last step.
    const trainer = serveTrainer({ outputDir, workerThread: false, signal: abort.signal }).then(
      () => 'returned',
      (error: unknown) => (abort.signal.aborted ? 'aborted' : Promise.reject(error)),
    );
    const server = await serveInference({ checkpoint: join(outputDir, 'broadcasts', 'step_0'), port: 0, maxTokens: 1 });
    try {
      const config = await readRunConfigFile(DEFAULT_CONFIG);
      for (const set of [
        `max_steps=${steps}`,
        'groups_per_step=4',
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
      await train({ config, out: join(dir, 'run'), log: (line) => lines.push(line) });
      const metrics = await readMetrics(join(dir, 'run'));
      expect(metrics.map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
      expect(lines.filter((line) => /empty batch/.test(line))).toHaveLength(steps);
      // Rollout m ran on version m − 2, pushed to the server from the trainer's broadcast.
      expect(metrics.map((m) => m.policy_version)).toEqual([0, 0, 1, 2, 3]);
      expect(server.version).toBe(3);
      // Every step reached the trainer, the last two after the run; it stopped by itself.
      const sent = await readdir(join(outputDir, 'rollouts'));
      expect(sent.sort()).toEqual(['step_1', 'step_2', 'step_3', 'step_4', 'step_5']);
      expect(await trainer).toBe('returned');
    } finally {
      abort.abort();
      await trainer;
      await server.close();
    }
  }, 300_000);
});
