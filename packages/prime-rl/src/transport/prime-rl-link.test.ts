import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative as relativePath, resolve } from 'node:path';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VllmShapedServer } from '../testing.ts';
import { InferenceEndpointsSchema, parseTransportConfig } from './config.ts';
import { broadcastStepDir, readRollouts } from './filesystem.ts';
import type { WireSample } from './micro-batch.ts';
import { openExternalPolicy, RolloutLink } from './prime-rl-link.ts';
import { readSampleExport, sampleExportPath } from './sample-export.ts';

const PYTHON = '/usr/bin/python3';
const CHECKER = resolve(import.meta.dirname, '../../../../tooling/wire-check/check_rollouts.py');
const hasMsgpack = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;

describe('transport config', () => {
  it('fills prime-rl defaults and names the field of a bad value', () => {
    expect(parseTransportConfig({ type: 'zmq', outputDir: 'runs/x' })).toEqual({
      type: 'zmq',
      outputDir: 'runs/x',
      dataWorldSize: 1,
      seqLen: 2048,
      padToMultipleOf: 1,
      exportSamples: false,
      host: 'localhost',
      port: 5555,
    });
    expect(() => parseTransportConfig({ type: 'filesystem', outputDir: 'runs/x', dataWorldSize: 0 })).toThrow(
      /^transport\.dataWorldSize: /,
    );
    expect(() => parseTransportConfig({ type: 'nccl' })).toThrow(/^transport\.type: /);
  });
});

describe('one orchestrator step loop against a trainer on files and a vLLM-shaped server', () => {
  let model: ScriptedModelServer;
  let vllm: VllmShapedServer;
  let outputDir: string;
  beforeEach(async () => {
    model = await ScriptedModelServer.start({ script: () => 'check then bet', vllmTokens: true });
    vllm = await VllmShapedServer.start({ upstream: model.url });
    outputDir = await mkdtemp(join(tmpdir(), 'troupe-link-'));
  });
  afterEach(async () => {
    await vllm.close();
    await model.close();
    await rm(outputDir, { recursive: true, force: true });
  });

  it('sends the server an absolute weight_dir when output_dir is relative (vLLM resolves it from its own checkout)', async () => {
    const relative = relativePath(process.cwd(), outputDir);
    const policy = openExternalPolicy({
      inference: InferenceEndpointsSchema.parse({ baseUrls: [vllm.baseUrl], model: 'policy' }),
      outputDir: relative,
      retry: { minDelayMs: 5, maxDelayMs: 10, multiplierMs: 5 },
    });
    try {
      const dir = broadcastStepDir({ outputDir, step: 1 });
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'model.safetensors'), 'weights 1');
      await writeFile(join(dir, 'STABLE'), '');
      await policy.relay.advanceTo({ step: 1 });
      expect(vllm.violations).toEqual([]);
      expect(relative.startsWith('/')).toBe(false);
      expect(vllm.weightDir).toBe(join(outputDir, 'broadcasts', 'step_1'));
    } finally {
      policy.close();
    }
  });

  it('sends steps 1..3, each sampled by policy v(N−1), and pushes each broadcast to inference', async () => {
    const transport = parseTransportConfig({
      type: 'filesystem',
      outputDir,
      dataWorldSize: 2,
      seqLen: 64,
      padToMultipleOf: 4,
      exportSamples: true,
    });
    if (transport.type === 'in-process') throw new Error('unreachable');
    const link = await RolloutLink.open({ config: transport });
    const policy = openExternalPolicy({
      inference: InferenceEndpointsSchema.parse({ baseUrls: [vllm.baseUrl], model: 'policy' }),
      outputDir,
      retry: { minDelayMs: 5, maxDelayMs: 10, multiplierMs: 5 },
    });
    // The trainer: reads both ranks of each step, then broadcasts its weights with STABLE last.
    const trained: { step: number; trainedTokens: number; ranks: number }[] = [];
    const trainer = (async () => {
      for (let step = 1; step <= 3; step++) {
        const ranks = await Promise.all(
          [0, 1].map((rank) => readRollouts({ outputDir, step, rank, timeoutMs: 30_000, pollMs: 5 })),
        );
        const trainedTokens = ranks.flat().reduce((sum, batch) => sum + batch.lossMask.filter(Boolean).length, 0);
        trained.push({ step, trainedTokens, ranks: ranks.length });
        const dir = broadcastStepDir({ outputDir, step });
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, 'model.safetensors'), `weights ${step}`);
        await writeFile(join(dir, 'STABLE'), '');
      }
    })();

    const spans: { start: number; end: number }[][] = [];
    const sampled: number[] = [];
    const sent: WireSample[][] = [];
    try {
      for (let step = 1; step <= 3; step++) {
        const samples: WireSample[] = [];
        const stepSpans: { start: number; end: number }[] = [];
        let completionTokens = 0;
        for (let episode = 0; episode < 6; episode++) {
          const rollout = policy.pool.rollout();
          const reply = await rollout.complete({
            model: 'policy',
            messages: [{ role: 'user', content: `step ${step} hand ${episode}: your move?` }],
            sampling: { temperature: 0.9 },
          });
          const prompt = reply.promptTokenIds!;
          const completion = reply.completionTokenIds!;
          completionTokens += completion.length;
          const advantage = episode % 2 === 0 ? 1 : -1;
          samples.push({
            tokenIds: [...prompt, ...completion],
            mask: [...prompt.map(() => false), ...completion.map(() => true)],
            logprobs: [...prompt.map(() => 0), ...reply.completionLogprobs!],
            temperatures: [...prompt.map(() => 1), ...rollout.completionTemperatures()],
            envName: 'kuhn-poker',
            advantages: [...prompt.map(() => 0), ...completion.map(() => advantage)],
          });
          stepSpans.push(rollout.span!);
        }
        spans.push(stepSpans);
        sampled.push(completionTokens);
        sent.push(samples);
        const result = await link.send({ step, samples });
        expect(result.microBatchesPerRank).toBeGreaterThan(0);
        await policy.relay.advanceTo({ step, timeoutMs: 30_000 });
      }
      await trainer;
    } finally {
      policy.close();
      await link.close();
    }

    // Step N was sampled by policy v(N−1) and salted with it.
    expect(spans).toEqual([0, 1, 2].map((version) => Array.from({ length: 6 }, () => ({ start: version, end: version }))));
    expect(vllm.chat.map((call) => call.cacheSalt)).toEqual(
      [0, 1, 2].flatMap((version) => Array.from({ length: 6 }, () => String(version))),
    );
    expect(vllm.chat.map((call) => call.weightDir)).toEqual([
      ...Array.from({ length: 6 }, () => null),
      ...Array.from({ length: 6 }, () => broadcastStepDir({ outputDir, step: 1 })),
      ...Array.from({ length: 6 }, () => broadcastStepDir({ outputDir, step: 2 })),
    ]);
    // The trainer trained exactly the sampled tokens.
    expect(trained.map((entry) => entry.trainedTokens)).toEqual(sampled);
    expect(vllm.admin.map((call) => call.route)).toEqual([1, 2, 3].flatMap(() => ['pause', 'update_weights', 'resume']));
    expect(vllm.admin.filter((call) => call.route === 'update_weights').map((call) => call.body)).toEqual(
      [1, 2, 3].map((step) => ({ weight_dir: broadcastStepDir({ outputDir, step }) })),
    );
    expect(vllm.violations).toEqual([]);
    expect(policy.pool.version).toBe(3);
    // exportSamples: each step's samples as sent, per-token temperatures included.
    for (const step of [1, 2, 3]) {
      const exported = await readSampleExport({ path: sampleExportPath({ outputDir, step }) });
      expect(exported.header.step).toBe(step);
      expect(exported.samples).toEqual(sent[step - 1]);
    }

    if (hasMsgpack) {
      const check = spawnSync(PYTHON, [CHECKER, outputDir, '--seq-len', '64', '--pad-to-multiple-of', '4', '--world-size', '2'], {
        encoding: 'utf8',
      });
      expect(check.stderr).toBe('');
      expect(check.stdout).toMatch(/ok: steps=3 .* exports_checked=3/);
    }
  });
});
