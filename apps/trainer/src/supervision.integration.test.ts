import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { frozenCheckpointClient } from '@troupe/prime-rl/orchestrator';
import { type NodeProcessResult, runNode } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { startTeacherDouble } from './__fixtures__/vllm-teacher-double.ts';

const cli = resolve(import.meta.dirname, 'cli.ts');
const answerColor = resolve(import.meta.dirname, '__fixtures__/answer-color-env.ts');
const sayColor = resolve(import.meta.dirname, '__fixtures__/say-color-env.ts');
const policy = { d_model: 16, heads: 2, layers: 1, ffn_mult: 2, max_tokens: 1 };
const trainer = { worker_thread: false, lr: 1e-2 };

/** `troupe train --config <file> --out <dir>` on the embedded engine, from the app's folder. */
async function train(config: Record<string, unknown>, out: string, env: NodeJS.ProcessEnv = {}): Promise<NodeProcessResult> {
  const file = join(out, '..', `${out.split('/').at(-1)}.json`);
  writeFileSync(file, JSON.stringify(config));
  const result = await runNode(['--conditions=@troupe/source', '--import', 'tsx', cli, 'train', '--config', file, '--out', out], {
    cwd: resolve(import.meta.dirname, '..'),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  if (result.code !== 0) throw new Error(`troupe train exited ${result.code}: ${result.stderr}`);
  return result;
}

function metrics(out: string): Record<string, number>[] {
  return readFileSync(join(out, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Log-probabilities of next-token logits at temperature 1. */
function logSoftmax(logits: ArrayLike<number>): number[] {
  let top = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) top = Math.max(top, logits[i] as number);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] as number) - top);
  return Array.from(logits, (x) => x - top - Math.log(sum));
}

/** A run of the one policy on `sources`, `groups` groups a step, no checkpoint unless `extra` (top-level keys) sets one. */
function onePolicyRun(options: {
  seed: number;
  steps: number;
  groups: number;
  sources: Record<string, unknown>[];
  extra?: Record<string, unknown>;
}): Record<string, unknown> {
  const { seed, steps, groups, sources, extra } = options;
  return {
    seed,
    max_steps: steps,
    groups_per_step: groups,
    checkpoint_every: 0,
    train: { source: sources },
    policy,
    trainer,
    ...extra,
  };
}

/** A 20-step opd run of the answer-color env, distilling `teacher` (a checkpoint or an endpoint) into the one policy. */
function opdRun(teacher: Record<string, unknown>): Record<string, unknown> {
  const sources = [{ env: answerColor, group_size: 4, algorithm: { type: 'opd', teacher } }];
  return onePolicyRun({ seed: 2, steps: 20, groups: 6, sources });
}

/** opd's metrics of a run: every token trained under the teacher's KL only; over 20 steps the KL falls and the reward rises. */
function expectDistilled(lines: Record<string, number>[]): void {
  expect(lines.every((m) => m['trainer/rl_tokens'] === 0 && m['trainer/ref_kl_tokens'] === 24)).toBe(true);
  const kl = lines.map((m) => Number(m['trainer/teacher_kl']));
  const reward = lines.map((m) => Number(m['train/answer-color/speaker/reward/mean']));
  expect(mean(kl.slice(-5))).toBeLessThan(mean(kl.slice(0, 5)) - 1);
  expect(mean(reward.slice(-5))).toBeGreaterThan(mean(reward.slice(0, 5)) + 0.15);
}

/**
 * A 4-step run of two policies: `east` plays `sources.east`'s speaker under grpo, `west` plays
 * `sources.west`'s under its own algorithm (every sample kept, so each batch has its full size).
 */
function twoPolicyRun(options: {
  seed: number;
  east: Record<string, unknown>;
  west: Record<string, unknown>;
  policies: Record<string, unknown>;
}): Record<string, unknown> {
  const bound = (source: Record<string, unknown>, name: string) => ({ ...source, roles: { speaker: { policy: name } } });
  return {
    seed: options.seed,
    max_steps: 4,
    groups_per_step: 4,
    checkpoint_every: 0,
    filter_zero_advantages: false,
    train: { source: [bound({ ...options.east, algorithm: { type: 'grpo' } }, 'east'), bound(options.west, 'west')] },
    policies: options.policies,
    trainer,
  };
}

describe('sft and opd through troupe train --config (embedded engine)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-sft-opd-'));
  const teacher = join(dir, 'teacher');

  it("sft trains on a taskset's reference replies: cross-entropy falls and held-out reward rises", async () => {
    await train(
      onePolicyRun({
        seed: 1,
        steps: 20,
        groups: 6,
        sources: [{ env: answerColor, group_size: 1, algorithm: { type: 'sft', replies: { field: 'answer' } } }],
        extra: {
          checkpoint_every: 20,
          traces_every: 20,
          eval: { interval: 5, groups: 10, source: [{ env: answerColor, name: 'held-out', group_size: 4 }] },
        },
      }),
      teacher,
    );
    const lines = metrics(teacher);
    const ce = lines.map((m) => Number(m['trainer/ce_loss']));
    // No rl token: every token of the given replies trains under ce, normalised by its own count.
    expect(lines.every((m) => m['trainer/rl_tokens'] === 0 && m['trainer/ce_tokens'] === 6)).toBe(true);
    // The served replies are the reference ones, so every training episode scores 1.
    expect(lines.every((m) => m['train/answer-color/speaker/reward/mean'] === 1)).toBe(true);
    expect(ce.at(-1)).toBeLessThan((ce[0] as number) / 4);
    const held = lines.filter((m) => typeof m['eval/held-out/speaker/reward/mean'] === 'number');
    expect(Number(held.at(-1)?.['eval/held-out/speaker/reward/mean'])).toBeGreaterThan(0.8);
  }, 120_000);

  it('sft also trains on the replies of an exported traces.jsonl', async () => {
    const out = join(dir, 'from-traces');
    const replies = { traces: join(teacher, 'traces.jsonl') };
    const sources = [{ env: answerColor, group_size: 1, algorithm: { type: 'sft', replies } }];
    await train(onePolicyRun({ seed: 4, steps: 3, groups: 6, sources }), out);
    const lines = metrics(out);
    expect(lines.every((m) => m['trainer/ce_tokens'] === 6 && m['train/answer-color/speaker/reward/mean'] === 1)).toBe(true);
  }, 120_000);

  it("opd distils a teacher checkpoint: the student's KL to the teacher falls and its reward rises", async () => {
    const out = join(dir, 'opd');
    await train(opdRun({ checkpoint: join(teacher, 'checkpoint') }), out);
    expectDistilled(metrics(out));
  }, 120_000);

  it('opd distils an endpoint teacher (a vLLM scoring double serving the sft checkpoint): KL falls, reward rises', async () => {
    const served = await frozenCheckpointClient({ dir: join(teacher, 'checkpoint'), maxTokens: 1, seed: 17 });
    const vocabSize = served.tokenizer.toJSON().vocab.length;
    const double = await startTeacherDouble({
      name: 'answer-color-teacher',
      vocabSize,
      maxModelLen: served.config.contextLength,
      nextLogprobs: async (prefix) => logSoftmax(await served.nextLogits(prefix)),
    });
    const out = join(dir, 'opd-endpoint');
    try {
      await train(opdRun({ base_url: double.baseUrl, model: 'answer-color-teacher', api_key_var: 'TEACHER_KEY' }), out, {
        TEACHER_KEY: double.apiKey,
      });
    } finally {
      await double.close();
    }
    expectDistilled(metrics(out));
    // Every branch was scored on the double with prime-rl's request, and the key was never recorded.
    expect(double.requests.length).toBeGreaterThanOrEqual(20 * 24);
    expect(double.requests.every((r) => (r.sampling_params as { prompt_logprobs: number }).prompt_logprobs === 1)).toBe(true);
    expect(readFileSync(join(out, 'config.json'), 'utf8')).not.toContain(double.apiKey);
  }, 180_000);

  it('one policy trains on a grpo source and an sft source in the same run and the same steps', async () => {
    const out = join(dir, 'mixed');
    const sources = [
      { env: sayColor, group_size: 4, algorithm: { type: 'grpo' } },
      { env: answerColor, group_size: 1, algorithm: { type: 'sft' } },
    ];
    await train(onePolicyRun({ seed: 3, steps: 6, groups: 4, sources }), out);
    const lines = metrics(out);
    expect(lines.every((m) => m['train/say-color/episodes'] === 8 && m['train/answer-color/episodes'] === 2)).toBe(true);
    expect(lines.every((m) => m['trainer/ce_tokens'] === 2)).toBe(true);
    // Some step trains both components at once, each over its own tokens.
    expect(lines.some((m) => Number(m['trainer/rl_tokens']) > 0 && Number(m['trainer/ce_tokens']) > 0)).toBe(true);
  }, 120_000);

  it("with several policies, sft serves the given replies to the policy a role binds and trains only that policy's stream", async () => {
    const out = join(dir, 'two-policies');
    const west = { env: answerColor, group_size: 1, algorithm: { type: 'sft', replies: { field: 'answer' } } };
    await train(
      twoPolicyRun({ seed: 3, east: { env: sayColor, group_size: 4 }, west, policies: { west: policy, east: policy } }),
      out,
    );
    const lines = metrics(out);
    expect(lines).toHaveLength(4);
    for (const m of lines) {
      // West's role was served the reference replies (every episode scores 1), and west trained on them under ce only.
      expect(m['train/answer-color/speaker/reward/mean']).toBe(1);
      expect(m['batch/west/samples']).toBe(2);
      expect([m['trainer/west/ce_tokens'], m['trainer/west/rl_tokens']]).toEqual([2, 0]);
      // East sampled its own replies and trained on them under rl only.
      expect(m['batch/east/samples']).toBe(8);
      expect([m['trainer/east/ce_tokens'], m['trainer/east/rl_tokens']]).toEqual([0, 8]);
    }
  }, 120_000);

  it('with several policies, opd distils into the policy its role binds, checking the teacher against that policy', async () => {
    const out = join(dir, 'two-policies-opd');
    const teacherCheckpoint = { checkpoint: join(teacher, 'checkpoint') };
    const west = { env: answerColor, name: 'distil', group_size: 4, algorithm: { type: 'opd', teacher: teacherCheckpoint } };
    await train(
      twoPolicyRun({
        seed: 2,
        east: { env: answerColor, name: 'play', group_size: 4 },
        west,
        // East comes first (the run's main client) with a vocabulary unlike the teacher's: only west's must match it.
        policies: { east: { ...policy, vocabulary: ['purple'] }, west: policy },
      }),
      out,
    );
    const lines = metrics(out);
    expect(lines).toHaveLength(4);
    for (const m of lines) {
      expect([m['trainer/west/ref_kl_tokens'], m['trainer/west/rl_tokens']]).toEqual([8, 0]);
      expect(typeof m['trainer/west/teacher_kl']).toBe('number');
      expect([m['trainer/east/ref_kl_tokens'], m['trainer/east/rl_tokens']]).toEqual([0, 8]);
    }
  }, 120_000);
});
