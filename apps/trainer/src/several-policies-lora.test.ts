import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VllmShapedServer } from '@troupe/prime-rl/testing';
import { InferenceAdmin } from '@troupe/prime-rl/transport';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { trainKilledAtCheckpoint } from './__fixtures__/trainer-cli.ts';
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
import { camelKeys, parseRunConfig } from './run-config.ts';

// Two policies as two LoRA adapters of one base model on one vLLM-shaped server: per policy its own
// prime-rl trainer double (tooling/prime-rl-double, broadcasting only its adapter with [model.lora])
// and output_dir; the orchestrator loads each new adapter with prime-rl's /load_lora_adapter.
const { runIt, trainers, tempDir } = trainerDoubleSuite('several-lora-');

function twoAdapters(options: {
  dir: string;
  baseUrl: string;
  steps: number;
  lora?: Record<string, string | undefined>;
  env?: string;
  run?: Record<string, unknown>;
}) {
  return twoExternalPolicies({
    dir: options.dir,
    steps: options.steps,
    ...(options.env ? { env: options.env } : {}),
    ...(options.run ? { run: options.run } : {}),
    inference: (name) => {
      const lora = options.lora ? options.lora[name] : name;
      return { base_urls: [options.baseUrl], model: 'base-model', ...(lora ? { lora_name: lora } : {}) };
    },
  });
}

/** The `lora_path` of each adapter load of `name` the server got from `from` on, with its outcome. */
function loads(vllm: VllmShapedServer, name: string, from = 0) {
  return vllm.admin
    .slice(from)
    .filter((c) => c.route === 'load_lora_adapter' && (c.body as { lora_name: string }).lora_name === name)
    .map((c) => [(c.body as { lora_path: string }).lora_path, c.outcome]);
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
    const dir = await tempDir();
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
      const dir = await tempDir();
      const steps = 3;
      const model = await twoSidesModel();
      const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'base-model', enableLora: true });
      const raw = twoAdapters({ dir, baseUrl: vllm.baseUrl, steps });
      try {
        const started = [];
        for (const policy of ['west', 'east']) {
          const trainer = await trainers.start({ dir, raw, policy });
          expect(trainer.trainerToml).toContain('[model.lora]');
          expect(trainer.inferenceToml).toContain('enable_lora = true');
          started.push(trainer.exit);
        }
        const result = await train({ config: raw, out: join(dir, 'run'), baseDir: import.meta.dirname });
        expect(await Promise.all(started), trainers.stderr).toEqual([0, 0]);
        expect(result.steps).toBe(steps);

        for (const name of ['west', 'east']) {
          expect((await decodedSteps(dir, name)).map((d) => d.loss_tokens)).toEqual([16, 16, 16]);
          // Its adapter's start-up broadcast, then each version, loaded under its own name.
          expect(loads(vllm, name)).toEqual([0, 1, 2].map((n) => [broadcastDir(dir, name, n), 'ok']));
          // Every request of its seat named its adapter and was answered by its own adapter's weights.
          const calls = vllm.chat.filter((c) => c.model === name);
          expect(calls.length).toBe(24);
          for (const call of calls) expect(call.loraPath).toContain(join(wireDir(dir, name), 'broadcasts'));
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

  runIt(
    'a LoRA run SIGKILLed after a checkpoint resumes each policy at its own step with its own adapter of that step',
    async () => {
      const dir = await tempDir();
      // Each seat answers left, right, left, … within a step (one group of 4: both rewards in it).
      // The left seat (west) sits out step 2's task, so west's trainer skips that step and lags
      // east's by one from then on. The killed run is held at step 4 (version 3): its checkpoint
      // of step 3 is the last thing it did.
      const counts = new Map<string, number>();
      let release: () => void = () => {};
      let held: Promise<void> | null = new Promise((done) => (release = done));
      const model = await twoSidesModel(async (_request, { body }) => {
        const { model: name, cache_salt: salt } = body as { model: string; cache_salt: string };
        if (salt === '3' && held) await held;
        const n = counts.get(`${name}@${salt}`) ?? 0;
        counts.set(`${name}@${salt}`, n + 1);
        return n % 2 === 0 ? 'left' : 'right';
      });
      const vllm = await VllmShapedServer.start({ upstream: model.url, servedModelName: 'base-model', enableLora: true });
      const raw = twoAdapters({
        dir,
        baseUrl: vllm.baseUrl,
        steps: 5,
        env: LEFT_RESTS_ENV,
        // Every step checkpointed: a lagging policy's trainer then holds a checkpoint of each of its own steps.
        run: { groups_per_step: 1, checkpoint_every: 1 },
      });
      const out = join(dir, 'run');
      try {
        for (const policy of ['west', 'east']) await trainers.start({ dir, raw, policy });
        await writeFile(join(dir, 'run.json'), JSON.stringify(raw));
        const killed = await trainKilledAtCheckpoint({
          args: ['--config', join(dir, 'run.json'), '--run-dir', out],
          out,
          step: 3,
        });
        expect(killed.signal, killed.stderr).toBe('SIGKILL');
        // The whole launch went down: both trainers too, waiting for their next step.
        await trainers.stop('SIGKILL');
        release();
        held = null;

        // The checkpoint names each policy's own step and adapter: west trained 2 steps, east 3.
        const checkpoint = JSON.parse(await readFile(join(out, 'checkpoint', 'orchestrator.json'), 'utf8'));
        expect(checkpoint.step).toBe(3);
        expect(checkpoint.policies).toEqual({
          west: { step: 2, dir: broadcastDir(dir, 'west', 2) },
          east: { step: 3, dir: broadcastDir(dir, 'east', 3) },
        });
        for (const [name, step] of [
          ['west', 2],
          ['east', 3],
        ] as const) {
          // Nothing past its step on the wire, so launch.sh --resume would remove nothing.
          expect((await readdir(join(wireDir(dir, name), 'broadcasts'))).sort()).toEqual(
            Array.from({ length: step + 1 }, (_, n) => `step_${n}`),
          );
          await trainers.start({ dir, raw, policy: name, resumeStep: step });
        }
        const seen = { admin: vllm.admin.length, chat: vllm.chat.length };
        const resumed = await train({ config: raw, out, resume: true, baseDir: import.meta.dirname });
        expect(resumed.steps).toBe(5);

        // Each trainer went on from its own checkpoint: west's steps 3 and 4, east's 4 and 5.
        expect((await decodedSteps(dir, 'west')).map((d) => `${d.step}:${d.resumed_from}`)).toEqual([
          '1:null',
          '2:null',
          '3:2',
          '4:2',
        ]);
        expect((await decodedSteps(dir, 'east')).map((d) => `${d.step}:${d.resumed_from}`)).toEqual([
          '1:null',
          '2:null',
          '3:null',
          '4:3',
          '5:3',
        ]);
        // The server got each policy's adapter of its own checkpoint step first, under its own name.
        expect(loads(vllm, 'west', seen.admin)).toEqual([2, 3].map((n) => [broadcastDir(dir, 'west', n), 'ok']));
        expect(loads(vllm, 'east', seen.admin)).toEqual([3, 4].map((n) => [broadcastDir(dir, 'east', n), 'ok']));
        // Step 4 (version 3) was played by west's adapter of its step 2 and east's of its step 3.
        const played = vllm.chat.slice(seen.chat).map((c) => `${c.model}@${c.cacheSalt}:${c.loraPath}`);
        expect(played.sort()).toEqual(
          [
            ...Array(4).fill(`west@3:${broadcastDir(dir, 'west', 2)}`),
            ...Array(4).fill(`west@4:${broadcastDir(dir, 'west', 3)}`),
            ...Array(4).fill(`east@3:${broadcastDir(dir, 'east', 3)}`),
            ...Array(4).fill(`east@4:${broadcastDir(dir, 'east', 4)}`),
          ].sort(),
        );
        expect(vllm.refusedModels).toEqual([]);
        expect(vllm.violations).toEqual([]);
        const metrics = await readMetrics(out);
        expect(metrics.map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
        expect(metrics.map((m) => m['batch/west/samples'])).toEqual([4, 0, 4, 4, 4]);
        expect(metrics.map((m) => m['batch/east/samples'])).toEqual([4, 4, 4, 4, 4]);
      } finally {
        release();
        await trainers.stop();
        await vllm.close();
        await model.close();
      }
    },
    120_000,
  );
});
