import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import { describe, expect } from 'vitest';
import {
  broadcastDir,
  decodedSteps,
  LEFT_RESTS_ENV,
  trainerDoubleSuite,
  twoExternalPolicies,
  twoSidesModel,
  wireDir,
} from './__fixtures__/trainer-doubles.ts';
import { readMetrics, train } from './run.ts';

// Two policies on external engines: per policy its own prime-rl trainer (the double rebuilt from
// prime-rl's source, tooling/prime-rl-double, on the trainer.toml --emit-prime-rl writes for that
// policy) with its own output_dir, and its own vLLM-shaped server serving its own model name.
const { runIt, trainers, tempDir } = trainerDoubleSuite('several-external-');

function twoExternal(options: {
  dir: string;
  west: string;
  east: string;
  steps: number;
  env?: string;
  run?: Record<string, unknown>;
}) {
  const urls: Record<string, string> = { west: options.west, east: options.east };
  return twoExternalPolicies({
    dir: options.dir,
    steps: options.steps,
    ...(options.env ? { env: options.env } : {}),
    ...(options.run ? { run: options.run } : {}),
    inference: (name) => ({ base_urls: [urls[name]], model: `${name}-model` }),
  });
}

describe('several policies on external engines (one prime-rl trainer and one vLLM per policy)', () => {
  runIt(
    "sends each policy's samples to its own trainer and its weights to its own servers, under its own model name",
    async () => {
      const dir = await tempDir();
      const steps = 3;
      const model = await twoSidesModel();
      const west = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'west-model' });
      const east = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'east-model' });
      const raw = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps });
      try {
        const exits = [];
        for (const name of ['west', 'east']) {
          const trainer = await trainers.start({ dir, raw, policy: name });
          expect(trainer.trainerToml).toContain(`output_dir = "${wireDir(dir, name)}"`);
          expect(trainer.trainerToml).toContain(`name = "${name}-model"`);
          exits.push(trainer.exit);
        }
        const result = await train({ config: raw, out: join(dir, 'run'), baseDir: import.meta.dirname });
        expect(await Promise.all(exits), trainers.stderr).toEqual([0, 0]);
        expect(result.steps).toBe(steps);
        expect(result.trainer).toMatch(/^2 policies on external engines/);

        // Each trainer decoded its own steps 1..3 holding its own seat's samples only: two sampled
        // tokens per trace (the word and the end token), 2 groups × 4 episodes = 16 loss tokens a
        // step (both seats' would be 32).
        for (const name of ['west', 'east']) {
          const decoded = await decodedSteps(dir, name);
          expect(decoded.map((d) => d.step)).toEqual([1, 2, 3]);
          expect(decoded.map((d) => d.loss_tokens)).toEqual([16, 16, 16]);
        }
        // Each server got only its policy's broadcasts, in order, and only requests naming its model.
        for (const [server, name] of [
          [west, 'west'],
          [east, 'east'],
        ] as const) {
          const updates = server.admin
            .filter((c) => c.route === 'update_weights')
            .map((c) => (c.body as { weight_dir?: string }).weight_dir);
          expect(updates).toEqual([1, 2].map((n) => broadcastDir(dir, name, n)));
          expect(server.violations).toEqual([]);
          expect(server.refusedModels).toEqual([]);
          expect(new Set(server.chat.map((c) => c.model))).toEqual(new Set([`${name}-model`]));
          // One call per episode of its seat: 2 groups × 4 episodes × 3 steps.
          expect(server.chat.length).toBe(24);
        }
        const metrics = await readMetrics(join(dir, 'run'));
        expect(metrics.map((m) => m['batch/west/samples'])).toEqual([8, 8, 8]);
        expect(metrics.map((m) => m['batch/east/samples'])).toEqual([8, 8, 8]);
        // The checkpoint names each policy's broadcast.
        const checkpoint = JSON.parse(await readFile(join(dir, 'run', 'checkpoint', 'orchestrator.json'), 'utf8'));
        expect(checkpoint.policies).toEqual({
          west: { step: 3, dir: broadcastDir(dir, 'west', 3) },
          east: { step: 3, dir: broadcastDir(dir, 'east', 3) },
        });

        // --resume to step 5: each trainer restarted at its own checkpoint step (--resume.step 3).
        const longer = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps: 5 });
        const resumed = [];
        for (const name of ['west', 'east'])
          resumed.push((await trainers.start({ dir, raw: longer, policy: name, resumeStep: 3 })).exit);
        const again = await train({ config: longer, out: join(dir, 'run'), resume: true, baseDir: import.meta.dirname });
        expect(await Promise.all(resumed), trainers.stderr).toEqual([0, 0]);
        expect(again.steps).toBe(5);
        expect((await readMetrics(join(dir, 'run'))).map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
        for (const [server, name] of [
          [west, 'west'],
          [east, 'east'],
        ] as const) {
          const decoded = await decodedSteps(dir, name);
          expect(decoded.map((d) => `${d.step}:${d.resumed_from}`)).toEqual(['1:null', '2:null', '3:null', '4:3', '5:3']);
          // The resumed servers were given their own policy's step 3 first, then step 4.
          const updates = server.admin
            .filter((c) => c.route === 'update_weights')
            .map((c) => (c.body as { weight_dir?: string }).weight_dir);
          expect(updates.slice(2)).toEqual([3, 4].map((n) => broadcastDir(dir, name, n)));
        }
      } finally {
        await west.close();
        await east.close();
        await model.close();
      }
    },
    120_000,
  );

  runIt(
    'refuses to resume a policy that lags the run when its trainer holds no checkpoint of its step, naming checkpoint_every',
    async () => {
      const dir = await tempDir();
      const model = await twoSidesModel();
      const west = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'west-model' });
      const east = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'east-model' });
      // West sits out step 2: at the run's checkpoint of step 3 it is at its step 2, and its trainer
      // (checkpointing every 3 of its own steps) holds no checkpoint of it.
      const run = { groups_per_step: 1, checkpoint_every: 3 };
      const raw = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps: 3, env: LEFT_RESTS_ENV, run });
      try {
        for (const policy of ['west', 'east']) await trainers.start({ dir, raw, policy });
        expect((await train({ config: raw, out: join(dir, 'run'), baseDir: import.meta.dirname })).steps).toBe(3);
        await trainers.stop();
        const checkpoint = JSON.parse(await readFile(join(dir, 'run', 'checkpoint', 'orchestrator.json'), 'utf8'));
        expect([checkpoint.policies.west.step, checkpoint.policies.east.step]).toEqual([2, 3]);
        const longer = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps: 5, env: LEFT_RESTS_ENV, run });
        const seen = [west.admin.length, east.admin.length];
        await expect(train({ config: longer, out: join(dir, 'run'), resume: true })).rejects.toThrow(
          /policy west lags the run: its step 2 at the run's step 3.*checkpoint_every \(3\).*resumes only with checkpoint_every = 1/,
        );
        // Refused before any server was given weights.
        expect([west.admin.length, east.admin.length]).toEqual(seen);
      } finally {
        await west.close();
        await east.close();
        await model.close();
      }
    },
    120_000,
  );
});
