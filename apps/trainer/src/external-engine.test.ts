import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { decode } from '@msgpack/msgpack';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import { ServedModelError } from '@troupe/prime-rl/transport';
import type { Episode } from '@troupe/verifiers';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { primeRlLaunch } from './emit-prime-rl.ts';
import { readMetrics, train } from './run.ts';
import { camelKeys, parseRunConfig, RunConfigError } from './run-config.ts';

// policy.engine = "external": prime-rl's own trainer and vLLM, whose weights the orchestrator
// never reads. Both are doubles here (no GPU): prime-rl's trainer rebuilt from its source
// (tooling/prime-rl-double, one rank under the torchrun double, on the trainer.toml that
// --emit-prime-rl writes), which broadcasts a directory the orchestrator cannot read (its
// model.safetensors is a named pipe: an open for reading blocks for ever, so a run that touched
// the weights would never finish), and a vLLM-shaped server on loopback that records the
// weight_dir of every update.
const PYTHON = '/usr/bin/python3';
const DOUBLE = resolve(import.meta.dirname, '../../../tooling/prime-rl-double');
const ready = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
// Under CI a missing double is a failure, not a skip (.ci/run installs python3-msgpack).
const runIt = ready || process.env.CI === 'true' ? it : it.skip;
const env = './__fixtures__/say-color-env.ts';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const SERVED = 'Qwen/Qwen3-0.6B';

function externalConfig(outputDir: string, baseUrl: string, steps: number, model = SERVED) {
  return {
    seed: 0,
    max_steps: steps,
    groups_per_step: 3,
    // On-policy: rollout m is sampled by version m − 1, so every broadcast but the last is served.
    max_async: 0,
    checkpoint_every: steps,
    traces_every: 1,
    train: { source: [{ env, group_size: 4, algorithm: { type: 'grpo' } }] },
    eval: { interval: 2, groups: 1, source: [{ env, name: 'held-out', group_size: 2 }] },
    policy: { engine: 'external', max_tokens: 1, temperature: 1 },
    transport: { type: 'filesystem', output_dir: outputDir },
    inference: { base_urls: [baseUrl], model, start_timeout_seconds: 30 },
  };
}

describe('policy.engine = "external" (prime-rl trainer + vLLM, weights never read)', () => {
  runIt(
    'trains through the wire: rank files reach the trainer, each broadcast directory reaches the servers in order, policy versions advance',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'external-engine-'));
      dirs.push(dir);
      const outputDir = join(dir, 'wire');
      const out = join(dir, 'run');
      const steps = 4;
      const words = ['red', 'green', 'blue'];
      // vLLM's replies: token ids and logprobs with each (one token per word); varied so groups have advantages.
      const model = await ScriptedModelServer.start({
        vllmTokens: true,
        keepLog: false,
        script: (_request, { callIndex }) => words[(callIndex * 7 + (callIndex >> 2)) % 3] as string,
      });
      const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: SERVED });
      const launch = primeRlLaunch({
        config: parseRunConfig(camelKeys(externalConfig(outputDir, vllm.baseUrl, steps))),
        configPath: null,
        out,
      });
      await writeFile(join(dir, 'trainer.toml'), launch['trainer.toml']);
      const trainer = spawn(
        PYTHON,
        [join(DOUBLE, 'torchrun.py'), '--nproc-per-node', '1', join(DOUBLE, 'trainer.py'), '@', join(dir, 'trainer.toml')],
        { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(trainer);
      let trainerErr = '';
      trainer.stderr?.on('data', (d) => (trainerErr += d));
      const trainerExit = new Promise<number | null>((res) => trainer.on('close', (code) => res(code)));
      try {
        const lines: string[] = [];
        const result = await train({
          config: externalConfig(outputDir, vllm.baseUrl, steps),
          out,
          baseDir: import.meta.dirname,
          log: (line) => lines.push(line),
        });
        expect(await trainerExit, trainerErr).toBe(0);
        expect(result.steps).toBe(steps);
        expect(result.trainer).toMatch(/external trainer .*weights not read/);

        // Every step's rank file exists and decodes as a msgpack list of micro batches.
        for (let step = 1; step <= steps; step++) {
          const bytes = await readFile(join(outputDir, 'rollouts', `step_${step}`, 'rank_0.bin'));
          const batches = decode(bytes) as unknown[][];
          expect(Array.isArray(batches)).toBe(true);
          expect(batches.length).toBeGreaterThan(0);
          expect((batches[0] as unknown[][])[0]?.length).toBeGreaterThan(0);
        }
        const decoded = (await readFile(join(outputDir, 'trainer-double', 'rank_0.jsonl'), 'utf8')).trim().split('\n');
        expect(decoded.map((l) => (JSON.parse(l) as { step: number }).step)).toEqual([1, 2, 3, 4]);

        // The servers got each broadcast directory, in order, inside pause → update_weights → resume.
        const updates = vllm.admin
          .filter((c) => c.route === 'update_weights')
          .map((c) => (c.body as { weight_dir?: string }).weight_dir);
        expect(updates).toEqual([1, 2, 3].map((n) => join(outputDir, 'broadcasts', `step_${n}`)));
        expect(vllm.admin.map((c) => c.route)).toEqual(Array(3).fill(['pause', 'update_weights', 'resume']).flat());
        expect(vllm.violations).toEqual([]);
        // Every request named the served model (the policy is "main" inside troupe); none was refused.
        expect(vllm.refusedModels).toEqual([]);
        expect(vllm.chat.length).toBeGreaterThan(0);
        expect(new Set(vllm.chat.map((c) => c.model))).toEqual(new Set([SERVED]));
        // Token ids and logprobs came from the servers; the prefix cache is salted per version.
        expect(vllm.chat.every((c) => c.returnTokenIds === true && c.logprobs === true)).toBe(true);
        expect([...new Set(vllm.chat.map((c) => c.cacheSalt))]).toEqual(['0', '1', '2', '3']);

        // Policy versions advance, in the metrics and in each traced call.
        const metrics = await readMetrics(out);
        expect(metrics.map((m) => m.policy_version)).toEqual([0, 1, 2, 3]);
        expect(metrics.every((m) => Number(m['batch/samples']) > 0)).toBe(true);
        const episodes = (await readFile(join(out, 'traces.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Episode);
        const versions = episodes.flatMap((e) => e.traces.flatMap((t) => t.calls.map((c) => c.policyVersion)));
        expect([...new Set(versions)]).toEqual([0, 1, 2, 3]);
        // The eval source ran on the servers at the version they held.
        expect(metrics.filter((m) => m['eval/held-out/episodes'] === 2).map((m) => m.step)).toEqual([2, 4]);

        // Never read: every model.safetensors is still a pipe no one opened (an open would have hung the
        // run). The trainer deleted step_{N-2} after broadcasting step N, as prime-rl's does, except a
        // step on its checkpoint interval (trainer.toml's [ckpt] interval = checkpoint_every = 4: step 0).
        expect((await readdir(join(outputDir, 'broadcasts'))).sort()).toEqual(['step_0', 'step_3', 'step_4']);
        for (let step = 3; step <= steps; step++) {
          expect((await lstat(join(outputDir, 'broadcasts', `step_${step}`, 'model.safetensors'))).isFIFO()).toBe(true);
        }
        // The checkpoint holds the orchestrator's state and the broadcast step (and its manifest), no tensors.
        expect((await readdir(join(out, 'checkpoint'))).sort()).toEqual(['manifest.json', 'orchestrator.json']);
        const checkpoint = JSON.parse(await readFile(join(out, 'checkpoint', 'orchestrator.json'), 'utf8'));
        expect(checkpoint.broadcast).toEqual({ step: 4, dir: join(outputDir, 'broadcasts', 'step_4') });
        expect(checkpoint.state.orchestrator.cursors).toEqual({ 'say-color': 12 });
        expect(existsSync(join(outputDir, 'model.json'))).toBe(false);
        // The trainer wrote its own checkpoint of the same step; without it, --resume is refused naming both sides.
        expect(existsSync(join(outputDir, 'checkpoints', 'step_4', 'trainer'))).toBe(true);
        await rm(join(outputDir, 'checkpoints'), { recursive: true });
        await expect(
          train({ config: externalConfig(outputDir, vllm.baseUrl, steps), out, resume: true, baseDir: import.meta.dirname }),
        ).rejects.toThrow(/the orchestrator is at step 4, the trainer has no checkpoint/);
      } finally {
        await vllm.close();
        await model.close();
      }
    },
    120_000,
  );

  it('stops before the first rollout when a server does not serve [inference] model, naming the server and what it serves', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'external-engine-'));
    dirs.push(dir);
    const model = await ScriptedModelServer.start({ vllmTokens: true, keepLog: false, script: () => 'red' });
    const right = await VllmShapedServer.start({ upstream: model.url, servedModelName: SERVED });
    const wrong = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'Qwen/Qwen3-1.7B' });
    try {
      const config = externalConfig(join(dir, 'wire'), right.baseUrl, 1);
      config.inference.base_urls = [right.baseUrl, wrong.baseUrl];
      const error = await train({ config, out: join(dir, 'run'), baseDir: import.meta.dirname }).catch((e: unknown) => e);
      expect(ServedModelError.isInstance(error)).toBe(true);
      expect((error as ServedModelError).baseUrl).toBe(wrong.baseUrl);
      expect((error as ServedModelError).served).toEqual(['Qwen/Qwen3-1.7B']);
      expect((error as Error).message).toMatch(
        /^inference\.model: http:\/\/127\.0\.0\.1:\d+\/v1 does not serve "Qwen\/Qwen3-0\.6B"; it serves "Qwen\/Qwen3-1\.7B"/,
      );
      // Nothing was sampled, on either server.
      expect([...right.chat, ...wrong.chat, ...right.refusedModels, ...wrong.refusedModels]).toEqual([]);
    } finally {
      await right.close();
      await wrong.close();
      await model.close();
    }
  });

  it('names the field of an impossible combination', () => {
    const base = externalConfig('/tmp/x', 'http://127.0.0.1:1/v1', 1);
    const { transport: _t, inference: _i, ...inProcess } = base;
    expect(() => parseRunConfig(inProcess)).toThrow(RunConfigError);
    expect(() => parseRunConfig(inProcess)).toThrow(/^transport\.type: policy\.engine = "external"/);
    const { inference: _j, ...noServers } = base;
    expect(() => parseRunConfig(noServers)).toThrow(/^inference\.base_urls: policy\.engine = "external"/);
    const pooled = {
      ...base,
      train: { source: [{ env, roles: { speaker: { pool: { of: 'main', keep: 2 } } } }] },
    };
    expect(() => parseRunConfig(pooled)).toThrow(
      /train\.source\[0\]\.roles\.speaker\.pool: opponent pools need the embedded policy/,
    );
  });

  it('refuses max_async above 1 as prime-rl does (its rollouts run at most one step ahead), naming the key, writing nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'external-async-'));
    try {
      const config = { ...externalConfig(join(dir, 'wire'), 'http://127.0.0.1:1/v1', 4), max_async: 2 };
      const error = (await train({ config, out: join(dir, 'run'), baseDir: import.meta.dirname }).catch((e) => e)) as Error;
      expect(error).toBeInstanceOf(RunConfigError);
      expect(error.message).toMatch(/^max_async: 2 is more than prime-rl allows with policy\.engine = "external"/);
      expect(await readdir(dir)).toEqual([]);
      // 0 and 1 are what prime-rl can do; they pass this check (and fail later here only for want of a server).
      for (const maxAsync of [0, 1]) {
        const other = (await train({
          config: { ...config, max_async: maxAsync, inference: { ...config.inference, start_timeout_seconds: 0.2 } },
          out: join(dir, 'run'),
          baseDir: import.meta.dirname,
        }).catch((e) => e)) as Error;
        expect(other.message).not.toMatch(/max_async/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
