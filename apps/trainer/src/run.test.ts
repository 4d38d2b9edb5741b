import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KUHN_INFO_SETS } from '@troupe/env-kuhn-poker';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { tempDirs } from './__fixtures__/temp-dirs.ts';
import { tinyKuhn } from './__fixtures__/tiny-runs.ts';
import { DEFAULT_CONFIG } from './default-config.ts';
import { readMetrics, train } from './run.ts';
import { applySet, parseRunConfig, RunConfigError, readRunConfigFile } from './run-config.ts';

const tempDir = tempDirs('troupe-train-');

describe('train (Kuhn poker, the default config, through the orchestrator)', () => {
  it('plays, scores, trains and swaps weights each step; the evaluator writes NashConv and policy tables; report; resumes', async () => {
    const out = await tempDir();
    const result = await train({ config: await tinyKuhn(), out });
    expect(result.steps).toBe(2);
    expect(result.episodes).toBe(8);
    const metrics = await readMetrics(out);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(typeof m['eval/kuhn-poker/nash_conv']).toBe('number');
      expect(typeof m['eval/kuhn-poker/nash_conv_average']).toBe('number');
      expect(typeof m['train/kuhn-poker/player0/reward/mean']).toBe('number');
      expect(typeof m['train/kuhn-poker/player1/advantage/std']).toBe('number');
      expect(m['train/kuhn-poker/player0/is_trainable/mean']).toBe(1);
      expect(m['off_policy/dropped']).toBe(0);
      expect(typeof m['time/step']).toBe('number');
    }
    // Step 2 trained on a rollout played with version 1, the weights step 1 trained (maxAsync 0).
    expect(metrics[1]?.policy_version).toBe(1);
    const table = JSON.parse(await readFile(join(out, 'policy-table.json'), 'utf8')) as Record<string, [number, number]>;
    expect(Object.keys(table)).toEqual([...KUHN_INFO_SETS]);
    for (const [p, b] of Object.values(table)) expect(p + b).toBeCloseTo(1, 5);
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('data-key="eval/kuhn-poker/nash_conv"');
    expect(html).toContain('data-key="trainer/entropy"');

    const resumed = await train({ config: await tinyKuhn(['max_steps=3']), out, resume: true });
    expect(resumed.steps).toBe(3);
    expect((await readMetrics(out)).map((m) => m.step)).toEqual([1, 2, 3]);
  });

  it('trains on onnxruntime-web (the engine a plain npm install has) and says which runtime served the policy', async () => {
    const out = await tempDir();
    const lines: string[] = [];
    const result = await train({
      config: await tinyKuhn(['policy.onnx_runtime=onnxruntime-web']),
      out,
      log: (line) => lines.push(line),
    });
    expect(result.steps).toBe(2);
    expect(result.episodes).toBe(8);
    expect(lines.find((l) => l.startsWith('trainer:'))).toContain('inference: onnxruntime-web (1 thread)');
    expect((await readMetrics(out)).map((m) => m.step)).toEqual([1, 2]);
  });

  it('stops at the first step when every episode fails (a frozen seat on an endpoint that is down), naming it; writes no checkpoint', async () => {
    const out = await tempDir();
    const error = (await train({
      config: await tinyKuhn(['train.source.0.roles.player1={"model":{"base_url":"http://127.0.0.1:9/v1","name":"gone"}}']),
      out,
      clean: true,
    }).catch((e: unknown) => e)) as Error & { step?: number };
    expect(error.name).toBe('TrainingStoppedError');
    expect(error.step).toBe(1);
    expect(error.message).toMatch(
      /^every episode of the run's first step \(step 1\) failed \(\d+ episodes\); first error \(source kuhn-poker, role player1, stage agent\): ProviderError/,
    );
    expect(error.message).toContain('http://127.0.0.1:9/v1');
    expect(existsSync(join(out, 'checkpoint'))).toBe(false);
    expect(await readMetrics(out)).toEqual([]);
  });

  it('never sends a trainable=false role or a role bound to a frozen checkpoint to the trainer', async () => {
    const first = await tempDir();
    await train({ config: await tinyKuhn(), out: first });
    for (const binding of [
      'train.source.0.roles.player1.trainable=false',
      `train.source.0.roles.player1={"checkpoint":"${join(first, 'checkpoint')}"}`,
    ]) {
      const out = await tempDir();
      const result = await train({ config: await tinyKuhn([binding]), out });
      expect(result.episodes).toBe(8);
      for (const m of await readMetrics(out)) {
        expect(m['train/kuhn-poker/player1/is_trainable/mean']).toBe(0);
        expect(m['train/kuhn-poker/player1/traces']).toBe(4);
        // Exactly one trace per hand (player 0's) reached the batch the trainer got.
        expect(m['batch/traces']).toBe(4);
        expect(m['batch/samples']).toBe(4);
      }
    }
  });
});

describe('a role bound to a frozen OpenAI-compatible endpoint', () => {
  it('plays through the endpoint and never reaches the trainer', async () => {
    const server = await ScriptedModelServer.start({ script: () => '[pass]' });
    try {
      const out = await tempDir();
      const binding = `train.source.0.roles.player1={"model":{"baseUrl":"${server.baseUrl}","name":"frozen-opponent"}}`;
      await train({ config: await tinyKuhn([binding]), out });
      expect(server.requests.length).toBeGreaterThan(0);
      expect(server.requests.every((entry) => JSON.stringify(entry.body).includes('frozen-opponent'))).toBe(true);
      for (const m of await readMetrics(out)) {
        expect(m['train/kuhn-poker/player1/is_trainable/mean']).toBe(0);
        expect(m['batch/traces']).toBe(4);
      }
    } finally {
      await server.close();
    }
  });
});

describe('a user env module trains', () => {
  it('trains an env module file that is not in the registry with GRPO, and its reward rises', async () => {
    const out = await tempDir();
    const config = {
      seed: 3,
      max_steps: 40,
      groups_per_step: 6,
      checkpoint_every: 0,
      train: {
        source: [{ env: './__fixtures__/say-color-env.ts', group_size: 8, algorithm: { type: 'grpo' } }],
      },
      // 40 held-out episodes per evaluation: over 12, the last one sat at 10/12, on the edge of 0.8
      // (seeds 1–6 score 0.95–0.97 over 40, 0.83–0.92 over 12).
      eval: { interval: 10, groups: 10, source: [{ env: './__fixtures__/say-color-env.ts', name: 'held-out', group_size: 4 }] },
      policy: { d_model: 16, heads: 2, layers: 1, ffn_mult: 2, max_tokens: 1 },
      trainer: { worker_thread: false, lr: 1e-2, betas: [0.9, 0.999] },
    };
    const result = await train({ config, out, baseDir: import.meta.dirname });
    const rewards = (await readMetrics(out)).map((m) => Number(m['train/say-color/speaker/reward/mean']));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`say-color reward per step: ${rewards.map((r) => r.toFixed(2)).join(' ')}`);
    expect(result.steps).toBe(40);
    expect(mean(rewards.slice(-3))).toBeGreaterThan(mean(rewards.slice(0, 3)) + 0.5);
    // The eval source is played every 10 steps by the new weights and never trained on.
    const metrics = await readMetrics(out);
    const evaluated = metrics.filter((m) => typeof m['eval/held-out/speaker/reward/mean'] === 'number');
    expect(evaluated.map((m) => m.step)).toEqual([10, 20, 30, 40]);
    expect(evaluated.map((m) => m['eval/held-out/episodes'])).toEqual([40, 40, 40, 40]);
    expect(Number(evaluated.at(-1)?.['eval/held-out/speaker/reward/mean'])).toBeGreaterThan(0.8);
    // Once the speaker is right every time, a group's advantages are all 0: such a rollout is not
    // trained on, the step rolls again (its episodes still count).
    const rerolled = metrics.reduce((sum, m) => sum + Number(m['batch/empty_steps']), 0);
    expect(result.episodes).toBe((40 + rerolled) * 6 * 8);
    expect(metrics.every((m) => Number(m['batch/samples']) > 0)).toBe(true);
  });
});

describe('run config', () => {
  it('reads TOML with snake_case keys, applies --set overrides, and names the field path of an error', async () => {
    const config = await readRunConfigFile(DEFAULT_CONFIG);
    applySet(config, 'train.source.0.ratio=2');
    applySet(config, 'trainer.lr=0.01');
    const parsed = parseRunConfig(config);
    expect(parsed.train.source[0]?.ratio).toBe(2);
    expect(parsed.trainer.lr).toBe(0.01);
    expect(parsed.trainer.betas).toEqual([0, 0.999]);
    expect(parsed.train.source[0]?.algorithm).toEqual({ type: 'rae', decay: 0.99 });
    applySet(config, 'train.source.0.ratio=-1');
    expect(() => parseRunConfig(config)).toThrow(RunConfigError);
    expect(() => parseRunConfig(config)).toThrow(/train\.source\[0\]\.ratio/);
    expect(() =>
      parseRunConfig({ train: { source: [{ env: 'x', roles: { a: { policy: 'main', checkpoint: 'd' } } }] } }),
    ).toThrow(/train\.source\[0\]\.roles\.a/);
  });

  it('refuses, with a trainer process, a trainable role sampled at another temperature than policy.temperature', () => {
    const config = (temperature: number, binding: Record<string, unknown> = {}) => ({
      transport: { type: 'filesystem', outputDir: '/tmp/troupe-wire' },
      policy: { temperature: 1 },
      train: { source: [{ env: 'x', roles: { a: { ...binding, sampling: { temperature } } } }] },
    });
    expect(() => parseRunConfig(config(0.7))).toThrow(/train\.source\[0\]\.roles\.a\.sampling\.temperature: 0\.7 differs/);
    expect(() => parseRunConfig(config(1))).not.toThrow();
    expect(() => parseRunConfig(config(0.7, { model: { baseUrl: 'http://127.0.0.1:1/v1', name: 'm' } }))).not.toThrow();
    // A role on the main policy whose traces never train may sample at any temperature.
    expect(() => parseRunConfig(config(0.7, { trainable: false }))).not.toThrow();
    expect(() => parseRunConfig(config(0.7, { trainable: true }))).toThrow(/0\.7 differs/);
    expect(() => parseRunConfig({ ...config(0.7), transport: { type: 'in-process' } })).not.toThrow();
  });

  it('refuses an unknown algorithm field and an unknown role with the source path', async () => {
    const bad = await tinyKuhn(['train.source.0.algorithm={"type":"rae","decay":2}']);
    await expect(train({ config: bad, out: await tempDir() })).rejects.toThrow(/train\.source\[0\]\.algorithm\.decay/);
    const role = await tinyKuhn(['train.source.0.roles.dealer.policy=main']);
    await expect(train({ config: role, out: await tempDir() })).rejects.toThrow(/train\.source\[0\]\.roles\.dealer/);
    expect(existsSync(DEFAULT_CONFIG)).toBe(true);
  });
});
