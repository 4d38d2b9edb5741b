import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { primeRlLaunch } from './emit-prime-rl.ts';
import { readMetrics, train } from './run.ts';
import { camelKeys, parseRunConfig } from './run-config.ts';

// Two policies on external engines: per policy its own prime-rl trainer (the double rebuilt from
// prime-rl's source, tooling/prime-rl-double, on the trainer.toml --emit-prime-rl writes for that
// policy) with its own output_dir, and its own vLLM-shaped server serving its own model name.
const PYTHON = '/usr/bin/python3';
const DOUBLE = resolve(import.meta.dirname, '../../../tooling/prime-rl-double');
const ready = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
// Under CI a missing double is a failure, not a skip (.ci/run installs python3-msgpack).
const runIt = ready || process.env.CI === 'true' ? it : it.skip;
const env = './__fixtures__/two-sides-env.ts';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function twoExternal(options: { dir: string; west: string; east: string; steps: number }) {
  const policy = (name: string, baseUrl: string) => ({
    engine: 'external',
    max_tokens: 1,
    transport: { type: 'filesystem', output_dir: join(options.dir, `wire-${name}`) },
    inference: { base_urls: [baseUrl], model: `${name}-model`, start_timeout_seconds: 30 },
  });
  return {
    seed: 0,
    max_steps: options.steps,
    groups_per_step: 2,
    max_async: 0,
    checkpoint_every: options.steps,
    filter_zero_advantages: false,
    train: { source: [{ env, group_size: 4, roles: { left: { policy: 'west' }, right: { policy: 'east' } } }] },
    policies: { west: policy('west', options.west), east: policy('east', options.east) },
  };
}

describe('several policies on external engines (one prime-rl trainer and one vLLM per policy)', () => {
  runIt(
    "sends each policy's samples to its own trainer and its weights to its own servers, under its own model name",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'several-external-'));
      dirs.push(dir);
      const steps = 3;
      const model = await ScriptedModelServer.start({
        vllmTokens: true,
        keepLog: false,
        script: (_request, { callIndex }) => (callIndex % 3 === 0 ? 'left' : 'right'),
      });
      const west = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'west-model' });
      const east = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'east-model' });
      const raw = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps });
      const exits: Promise<number | null>[] = [];
      let trainerErr = '';
      try {
        for (const name of ['west', 'east']) {
          const launch = primeRlLaunch({
            config: parseRunConfig(camelKeys(raw)),
            policy: name,
            configPath: null,
            out: join(dir, 'run'),
          });
          expect(launch['trainer.toml']).toContain(`output_dir = "${join(dir, `wire-${name}`)}"`);
          expect(launch['trainer.toml']).toContain(`name = "${name}-model"`);
          await writeFile(join(dir, `${name}.toml`), launch['trainer.toml']);
          const trainer = spawn(
            PYTHON,
            [join(DOUBLE, 'torchrun.py'), '--nproc-per-node', '1', join(DOUBLE, 'trainer.py'), '@', join(dir, `${name}.toml`)],
            { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
          );
          children.push(trainer);
          trainer.stderr?.on('data', (d) => (trainerErr += d));
          exits.push(new Promise((res) => trainer.on('close', (code) => res(code))));
        }
        const result = await train({ config: raw, out: join(dir, 'run'), baseDir: import.meta.dirname });
        expect(await Promise.all(exits), trainerErr).toEqual([0, 0]);
        expect(result.steps).toBe(steps);
        expect(result.trainer).toMatch(/^2 policies on external engines/);

        // Each trainer decoded its own steps 1..3 holding its own seat's samples only: two sampled
        // tokens per trace (the word and the end token), 2 groups × 4 episodes = 16 loss tokens a
        // step (both seats' would be 32).
        for (const name of ['west', 'east']) {
          const decoded = (await readFile(join(dir, `wire-${name}`, 'trainer-double', 'rank_0.jsonl'), 'utf8'))
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { step: number; loss_tokens: number });
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
          expect(updates).toEqual([1, 2].map((n) => join(dir, `wire-${name}`, 'broadcasts', `step_${n}`)));
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
          west: { step: 3, dir: join(dir, 'wire-west', 'broadcasts', 'step_3') },
          east: { step: 3, dir: join(dir, 'wire-east', 'broadcasts', 'step_3') },
        });

        // --resume to step 5: each trainer restarted at its own checkpoint step (--resume.step 3).
        const longer = twoExternal({ dir, west: west.baseUrl, east: east.baseUrl, steps: 5 });
        const resumed: Promise<number | null>[] = [];
        for (const name of ['west', 'east']) {
          const launch = primeRlLaunch({
            config: parseRunConfig(camelKeys(longer)),
            policy: name,
            configPath: null,
            out: join(dir, 'run'),
          });
          await writeFile(join(dir, `${name}.toml`), launch['trainer.toml']);
          const trainer = spawn(
            PYTHON,
            [
              join(DOUBLE, 'torchrun.py'),
              '--nproc-per-node',
              '1',
              join(DOUBLE, 'trainer.py'),
              '@',
              join(dir, `${name}.toml`),
              '--resume.step',
              '3',
            ],
            { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
          );
          children.push(trainer);
          trainer.stderr?.on('data', (d) => (trainerErr += d));
          resumed.push(new Promise((res) => trainer.on('close', (code) => res(code))));
        }
        const again = await train({ config: longer, out: join(dir, 'run'), resume: true, baseDir: import.meta.dirname });
        expect(await Promise.all(resumed), trainerErr).toEqual([0, 0]);
        expect(again.steps).toBe(5);
        expect((await readMetrics(join(dir, 'run'))).map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
        for (const [server, name] of [
          [west, 'west'],
          [east, 'east'],
        ] as const) {
          const decoded = (await readFile(join(dir, `wire-${name}`, 'trainer-double', 'rank_0.jsonl'), 'utf8'))
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { step: number; resumed_from: number | null });
          expect(decoded.map((d) => `${d.step}:${d.resumed_from}`)).toEqual(['1:null', '2:null', '3:null', '4:3', '5:3']);
          // The resumed servers were given their own policy's step 3 first, then step 4.
          const updates = server.admin
            .filter((c) => c.route === 'update_weights')
            .map((c) => (c.body as { weight_dir?: string }).weight_dir);
          expect(updates.slice(2)).toEqual([3, 4].map((n) => join(dir, `wire-${name}`, 'broadcasts', `step_${n}`)));
        }
      } finally {
        await west.close();
        await east.close();
        await model.close();
      }
    },
    120_000,
  );
});
