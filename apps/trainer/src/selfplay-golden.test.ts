import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportOnnx, PolicyModelClient } from '@troupe/prime-rl/inference';
import { embeddedPolicy } from '@troupe/prime-rl/orchestrator';
import { initWeights } from '@troupe/prime-rl/policy';
import { Env, kuhnPokerEnv, kuhnTaskset, kuhnTraining } from '@troupe/verifiers';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from './default-config.ts';
import { registerGameRuntime } from './game-runtime.ts';
import { readMetrics, train } from './run.ts';
import { applySet, readRunConfigFile } from './run-config.ts';

// Golden digests of the self-play path, computed from the code before the issue-18 speed work
// (commit 943a2c4) and committed in __fixtures__/selfplay-golden.json: a faster loop must record
// the same traces and the same rollout metrics, byte for byte, on the same seeds.

/**
 * Fields that differ between two runs of the same seed: clocks and random ids; and each call's
 * `policyVersion`, recorded since the golden was taken (checked apart: every call is at version 0).
 */
const VOLATILE = new Set(['timestamp', 'startedAt', 'endedAt', 'durationMs', 'timing', 'policyVersion']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (VOLATILE.has(key)) continue;
      if (key === 'id' && typeof v === 'string' && UUID.test(v)) continue;
      out[key] = stable(v);
    }
    return out;
  }
  return value;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

const golden = JSON.parse(await readFile(join(import.meta.dirname, '__fixtures__', 'selfplay-golden.json'), 'utf8')) as {
  traces: { episodes: number; sha256: string };
  metrics: { steps: number; sha256: string };
};

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('self-play path: byte-identical to the recorded golden run', () => {
  it('plays the same traces (tokens, masks, logprobs, rewards, info) from the same seed and weights', async () => {
    registerGameRuntime();
    const { tokenizer, policy: config } = embeddedPolicy({
      sources: [{ hooks: kuhnTraining as never, options: { prompts: 'pass-bet' }, taskset: kuhnTaskset() }],
      dModel: 16,
      layers: 1,
      heads: 2,
      ffnMult: 2,
      initStd: 0.5,
      seed: 3,
      maxTokens: 1,
    });
    const client = await PolicyModelClient.create({
      tokenizer,
      config,
      onnx: exportOnnx({ config, weights: initWeights(config) }),
      maxBatch: 64,
      maxTokens: 1,
      seed: 11,
    });
    const env = await Env.create({
      definition: kuhnPokerEnv,
      config: {
        id: 'kuhn-poker',
        prompts: 'pass-bet',
        invalidRetries: 1,
        deals: 'stratified',
        player0: { runtime: 'game' },
        player1: { runtime: 'game' },
      },
      run: { model: 'policy', client, sampling: { temperature: 1, maxTokens: 1 } },
    });
    const taskset = kuhnTaskset({ deals: 'stratified' });
    const lines: string[] = [];
    // Two rounds of 96 concurrent hands: batches of the micro-batcher mix seats and turns.
    for (let round = 0; round < 2; round++) {
      const episodes = await Promise.all(
        Array.from({ length: 96 }, (_, i) =>
          env.runEpisode({ task: taskset.at(round * 96 + i), group: { id: `g${round}-${i >> 3}`, index: i & 7 } }),
        ),
      );
      for (const episode of episodes) {
        for (const trace of episode.traces) for (const call of trace.calls) expect(call.policyVersion).toBe(0);
        lines.push(JSON.stringify(stable(episode)));
      }
    }
    expect(lines.length).toBe(golden.traces.episodes);
    // Some hands must reach a second decision, or the digest would not cover multi-turn prompts.
    expect(lines.some((l) => (l.match(/"sampled":true/g) ?? []).length >= 2)).toBe(true);
    expect(digest(lines.join('\n'))).toBe(golden.traces.sha256);
  });

  it('writes the same rollout and batch metrics for a two-step train() (both rollouts at version 0)', async () => {
    const out = await mkdtemp(join(tmpdir(), 'troupe-golden-'));
    dirs.push(out);
    const config = await readRunConfigFile(DEFAULT_CONFIG);
    for (const set of [
      'max_steps=2',
      'groups_per_step=6',
      'checkpoint_every=0',
      'train.source.0.group_size=4',
      'trainer.worker_thread=false',
      'policy.d_model=8',
      'policy.heads=2',
      'policy.ffn_mult=1',
      'policy.init_std=0.5',
    ])
      applySet(config, set);
    await train({ config, out });
    const metrics = await readMetrics(out);
    expect(metrics.length).toBe(golden.metrics.steps);
    // Rollout, batch and step-1 trainer forward values; timings, evaluations and later trainer
    // values depend on the optimizer's floating-point summation order, which this test does not pin.
    const kept = metrics.map((m) =>
      Object.fromEntries(
        Object.entries(m).filter(
          ([k]) =>
            !k.startsWith('time/') &&
            !k.startsWith('eval/') &&
            (!k.startsWith('trainer/') || (m.step === 1 && /^trainer\/(loss|rl_loss|ref_kl|entropy|lr|tokens)$/.test(k))),
        ),
      ),
    );
    expect(kept[0]?.['train/kuhn-poker/player0/traces']).toBe(24);
    expect(digest(JSON.stringify(kept))).toBe(golden.metrics.sha256);
  });
});
