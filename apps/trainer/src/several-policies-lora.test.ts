import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import { InferenceAdmin } from '@troupe/prime-rl/transport';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { primeRlLaunch } from './emit-prime-rl.ts';
import { readMetrics, train } from './run.ts';
import { camelKeys, parseRunConfig } from './run-config.ts';

// Two policies as two LoRA adapters of one base model on one vLLM-shaped server: per policy its own
// prime-rl trainer double (tooling/prime-rl-double, broadcasting only its adapter with [model.lora])
// and output_dir; the orchestrator loads each new adapter with prime-rl's /load_lora_adapter.
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

function twoAdapters(options: { dir: string; baseUrl: string; steps: number; lora?: Record<string, string | undefined> }) {
  const policy = (name: string) => {
    const lora = options.lora ? options.lora[name] : name;
    return {
      engine: 'external',
      max_tokens: 1,
      transport: { type: 'filesystem', output_dir: join(options.dir, `wire-${name}`) },
      inference: {
        base_urls: [options.baseUrl],
        model: 'base-model',
        start_timeout_seconds: 30,
        ...(lora ? { lora_name: lora } : {}),
      },
    };
  };
  return {
    seed: 0,
    max_steps: options.steps,
    groups_per_step: 2,
    max_async: 0,
    checkpoint_every: options.steps,
    filter_zero_advantages: false,
    train: { source: [{ env, group_size: 4, roles: { left: { policy: 'west' }, right: { policy: 'east' } } }] },
    policies: { west: policy('west'), east: policy('east') },
  };
}

describe('several policies as LoRA adapters of one vLLM', () => {
  it('refuses policies sharing a server without their own lora_name, naming the field', () => {
    const dir = '/nonexistent';
    const baseUrl = 'http://127.0.0.1:9/v1';
    expect(() =>
      parseRunConfig(camelKeys(twoAdapters({ dir, baseUrl, steps: 1, lora: { west: 'west', east: undefined } }))),
    ).toThrow(/policies\.east\.inference\.lora_name: policy east shares an inference server with policy west/);
    expect(() => parseRunConfig(camelKeys(twoAdapters({ dir, baseUrl, steps: 1, lora: { west: 'one', east: 'one' } })))).toThrow(
      /policies\.west\.inference\.lora_name: "one" is also the lora_name of policy east/,
    );
    expect(() => parseRunConfig(camelKeys(twoAdapters({ dir, baseUrl, steps: 1 })))).not.toThrow();
  });

  it('the vLLM double loads adapters as vLLM does: refused without LoRA enabled or adapter files, 404 for one not loaded', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lora-double-'));
    dirs.push(dir);
    await mkdir(join(dir, 'adapter'));
    await writeFile(join(dir, 'adapter', 'adapter_config.json'), '{}');
    const model = await ScriptedModelServer.start({ vllmTokens: true, keepLog: false, script: () => 'left' });
    const plain = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'base-model' });
    const lora = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'base-model', enableLora: true });
    const load = (server: VllmShapedServer, body: unknown) =>
      fetch(`${server.root}/load_lora_adapter`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { message: string } } }));
    const chat = (server: VllmShapedServer, name: string) =>
      fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: name, messages: [{ role: 'user', content: 'hi' }] }),
      });
    try {
      const disabled = await load(plain, { lora_name: 'west', lora_path: join(dir, 'adapter') });
      expect(disabled).toEqual({ status: 500, body: { error: expect.objectContaining({ message: 'LoRA is not enabled.' }) } });
      expect((await load(lora, { lora_name: 'west', lora_path: join(dir, 'missing') })).status).toBe(404);
      expect((await load(lora, { lora_name: '', lora_path: join(dir, 'adapter') })).status).toBe(400);
      expect((await load(lora, { lora_name: 'west' })).status).toBe(422);
      expect((await chat(lora, 'west')).status).toBe(404);
      expect(await load(lora, { lora_name: 'west', lora_path: join(dir, 'adapter') })).toEqual({
        status: 200,
        body: { status: 'ok' },
      });
      // A loaded name is reloaded in place (prime-rl forces load_inplace).
      expect((await load(lora, { lora_name: 'west', lora_path: join(dir, 'adapter') })).status).toBe(200);
      expect((await chat(lora, 'west')).status).toBe(200);
      expect((await chat(lora, 'east')).status).toBe(404);
      expect(lora.refusedModels).toEqual(['west', 'east']);
      // prime-rl retries a 404 (adapter files not visible yet) and fails at once on a 400.
      const admin = new InferenceAdmin({
        baseUrls: [lora.baseUrl],
        retry: { minDelayMs: 1, maxDelayMs: 1, multiplierMs: 1 },
      });
      lora.faults.load_lora_adapter.push({ status: 404 });
      await admin.loadLoraAdapter({ loraName: 'west', loraPath: join(dir, 'adapter') });
      expect(lora.admin.slice(-2).map((c) => c.outcome)).toEqual(['status 404', 'ok']);
      await expect(admin.loadLoraAdapter({ loraName: '', loraPath: join(dir, 'adapter') })).rejects.toThrow(/answered 400/);
      const models = (await (await fetch(`${lora.baseUrl}/models`)).json()) as { data: { id: string; parent: unknown }[] };
      expect(models.data.map((m) => [m.id, m.parent])).toEqual([
        ['base-model', null],
        ['west', 'base-model'],
      ]);
    } finally {
      await plain.close();
      await lora.close();
      await model.close();
    }
  });

  runIt(
    "trains each policy's adapter on its own trainer and loads each new adapter under its name on the one server",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'several-lora-'));
      dirs.push(dir);
      const steps = 3;
      const model = await ScriptedModelServer.start({
        vllmTokens: true,
        keepLog: false,
        script: (_request, { callIndex }) => (callIndex % 3 === 0 ? 'left' : 'right'),
      });
      const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'base-model', enableLora: true });
      const raw = twoAdapters({ dir, baseUrl: vllm.baseUrl, steps });
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
          expect(launch['trainer.toml']).toContain('[model.lora]');
          expect(launch['inference.toml']).toContain('enable_lora = true');
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

        for (const name of ['west', 'east']) {
          const decoded = (await readFile(join(dir, `wire-${name}`, 'trainer-double', 'rank_0.jsonl'), 'utf8'))
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { step: number; loss_tokens: number });
          expect(decoded.map((d) => d.loss_tokens)).toEqual([16, 16, 16]);
          // Its adapter's start-up broadcast, then each version, loaded under its own name.
          const loads = vllm.admin
            .filter((c) => c.route === 'load_lora_adapter' && (c.body as { lora_name: string }).lora_name === name)
            .map((c) => [(c.body as { lora_path: string }).lora_path, c.outcome]);
          expect(loads).toEqual([0, 1, 2].map((n) => [join(dir, `wire-${name}`, 'broadcasts', `step_${n}`), 'ok']));
          // Every request of its seat named its adapter and was answered by its own adapter's weights.
          const calls = vllm.chat.filter((c) => c.model === name);
          expect(calls.length).toBe(24);
          for (const call of calls) expect(call.loraPath).toContain(join(dir, `wire-${name}`, 'broadcasts'));
        }
        // No full-weight update on the shared server, no request for anything but the two adapters.
        expect(vllm.admin.filter((c) => c.route !== 'load_lora_adapter')).toEqual([]);
        expect(new Set(vllm.chat.map((c) => c.model))).toEqual(new Set(['west', 'east']));
        expect(vllm.refusedModels).toEqual([]);
        expect(vllm.violations).toEqual([]);
        const metrics = await readMetrics(join(dir, 'run'));
        expect(metrics.map((m) => m['batch/west/samples'])).toEqual([8, 8, 8]);
        expect(metrics.map((m) => m['batch/east/samples'])).toEqual([8, 8, 8]);
      } finally {
        await vllm.close();
        await model.close();
      }
    },
    120_000,
  );
});
