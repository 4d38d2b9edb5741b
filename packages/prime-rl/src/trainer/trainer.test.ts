import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTfBackend } from '../policy/backend.ts';
import { PolicyConfigSchema } from '../policy/config.ts';
import { loadCheckpoint, saveCheckpoint } from './checkpoint.ts';
import { TrainerConfigSchema, type TrainRow } from './config.ts';
import { lengthBuckets, policyLoss, Trainer } from './trainer.ts';

const config = PolicyConfigSchema.parse({
  vocabSize: 12,
  contextLength: 8,
  dModel: 16,
  layers: 1,
  heads: 2,
  outputTokens: [8, 9, 5],
  seed: 1,
});
const GOOD = 8;
const BAD = 9;

/** Probability of each output token after the prompt [2, 6, 4], from the trainer's own model. */
function probs(trainer: Trainer): number[] {
  return tf.tidy(() =>
    Array.from(
      tf
        .softmax(trainer.model.forward(tf.tensor2d([[2, 6, 4]], [1, 3], 'int32')))
        .slice([0, 2, 0], [1, 1, 12])
        .dataSync(),
    ),
  );
}

/** A batch sampled from the current policy: reward +1 for GOOD, −1 for BAD, advantage = reward − mean. */
function batch(trainer: Trainer, n: number, seed: number): TrainRow[] {
  const p = probs(trainer);
  let s = seed;
  const rows: TrainRow[] = [];
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const u = s / 2 ** 31;
    const token = u < (p[GOOD] as number) ? GOOD : u < (p[GOOD] as number) + (p[BAD] as number) ? BAD : 5;
    const reward = token === GOOD ? 1 : token === BAD ? -1 : 0;
    rows.push({
      tokenIds: [2, 6, 4, token],
      mask: [false, false, false, true],
      logprobs: [0, 0, 0, Math.log(p[token] as number)],
      advantages: [0, 0, 0, reward],
    });
  }
  return rows;
}

describe('Trainer', () => {
  beforeAll(async () => {
    await initTfBackend({ prefer: 'wasm' });
  });

  it('a per-step beta1 is the same step as a trainer configured with that β1', () => {
    const a = new Trainer({ policy: config, trainer: { lr: 1e-2, betas: [0.5, 0.999] } });
    const b = new Trainer({ policy: config, trainer: { lr: 1e-2, betas: [0, 0.999] } });
    const c = new Trainer({ policy: config, trainer: { lr: 1e-2, betas: [0, 0.999] } });
    for (let step = 0; step < 3; step++) {
      const rows = batch(a, 32, step + 1);
      a.trainStep(rows);
      b.trainStep(rows, { beta1: 0.5 });
      c.trainStep(rows);
    }
    const [wa, wb, wc] = [a, b, c].map((t) => t.getWeights().flatMap((w) => Array.from(w.data)));
    expect(wb).toEqual(wa);
    expect(wc).not.toEqual(wa);
    for (const t of [a, b, c]) t.dispose();
  });

  it('moves probability toward tokens with positive advantage; on-policy it sees ratio 1 and no mismatch', () => {
    const trainer = new Trainer({ policy: config, trainer: { lr: 0.02 } });
    const before = probs(trainer);
    // The output vocabulary is restricted: masked tokens have no mass.
    expect(before[0]).toBeLessThan(1e-6);
    expect((before[GOOD] as number) + (before[BAD] as number) + (before[5] as number)).toBeCloseTo(1, 5);
    const first = trainer.trainStep(batch(trainer, 64, 1));
    expect(first.mismatchKl).toBeLessThan(1e-5);
    expect(first.maskedFraction).toBe(0);
    expect(first.tokens).toBe(64);
    for (let i = 0; i < 15; i++) trainer.trainStep(batch(trainer, 64, i + 2));
    const after = probs(trainer);
    expect(after[GOOD]).toBeGreaterThan((before[GOOD] as number) + 0.3);
    expect(after[BAD]).toBeLessThan(before[BAD] as number);
    trainer.dispose();
  });

  it('masks tokens outside the ±0.2 trust region by advantage sign', () => {
    const trainer = new Trainer({ policy: config });
    const p = probs(trainer);
    // The inference policy claimed GOOD had probability p−0.3: π−μ = 0.3 > 0.2 with A>0 → masked.
    const rows: TrainRow[] = [
      {
        tokenIds: [2, 6, 4, GOOD],
        mask: [false, false, false, true],
        logprobs: [0, 0, 0, Math.log(Math.max((p[GOOD] as number) - 0.3, 0.01))],
        advantages: [0, 0, 0, 1],
      },
      {
        tokenIds: [2, 6, 4, GOOD],
        mask: [false, false, false, true],
        logprobs: [0, 0, 0, Math.log(p[GOOD] as number)],
        advantages: [0, 0, 0, 1],
      },
    ];
    expect(p[GOOD]).toBeGreaterThan(0.31);
    const m = trainer.trainStep(rows);
    expect(m.maskedFraction).toBeCloseTo(0.5, 5);
    expect(m.mismatchKl).toBeGreaterThan(0);
    trainer.dispose();
  });

  it('pulls toward the uniform reference with refKlTau and no advantage', () => {
    const trainer = new Trainer({ policy: config, trainer: { lr: 0.05, refKlTau: 1 } });
    const rows = batch(trainer, 16, 3).map((r) => ({ ...r, advantages: [0, 0, 0, 0] }));
    // Skew the policy first, then let the reference pull it back.
    for (let i = 0; i < 10; i++)
      trainer.trainStep(batch(trainer, 32, i + 10).map((r) => ({ ...r, advantages: r.advantages.map((a) => a * 5) })));
    const skewed = trainer.trainStep(rows).refKl;
    for (let i = 0; i < 20; i++) trainer.trainStep(rows);
    expect(trainer.trainStep(rows).refKl).toBeLessThan(skewed);
    trainer.dispose();
  });

  it('resumes exactly from a checkpoint: the next step gives identical weights', async () => {
    const a = new Trainer({ policy: config, trainer: { lr: 0.01 } });
    for (let i = 0; i < 3; i++) a.trainStep(batch(a, 32, i));
    const dir = await mkdtemp(join(tmpdir(), 'ckpt-'));
    await saveCheckpoint({
      dir: join(dir, 'c'),
      step: 3,
      state: { note: 'x' },
      weights: a.getWeights(),
      optimizer: a.optimizerState(),
    });
    const loaded = await loadCheckpoint({ dir: join(dir, 'c') });
    expect(loaded.step).toBe(3);
    expect(loaded.state).toEqual({ note: 'x' });
    const b = new Trainer({ policy: config, trainer: { lr: 0.01 }, weights: loaded.weights, optimizer: loaded.optimizer });
    const rows = batch(a, 32, 99);
    a.trainStep(rows);
    b.trainStep(rows);
    const wa = a.getWeights();
    const wb = b.getWeights();
    for (const [i, w] of wa.entries()) expect(Array.from(wb[i]?.data ?? [])).toEqual(Array.from(w.data));
    a.dispose();
    b.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('cuts a batch into length buckets (sorted, padded to multiples of 8), merging buckets smaller than minRows', () => {
    const row = (length: number): TrainRow => ({
      tokenIds: Array.from({ length }, () => 1),
      mask: [],
      logprobs: [],
      advantages: [],
    });
    const rows = [30, 5, 7, 20, 6, 9, 31].map(row);
    const buckets = lengthBuckets(rows, { context: 32, minRows: 2 });
    expect(buckets.map((b) => [b.time, b.rows.map((r) => r.tokenIds.length)])).toEqual([
      [8, [5, 6, 7]],
      [24, [9, 20]],
      [32, [30, 31]],
    ]);
    // One bucket when minRows exceeds the batch.
    expect(lengthBuckets(rows, { context: 32, minRows: 100 }).map((b) => b.time)).toEqual([32]);
  });

  it('takes the same step whether a batch runs as one padded bucket or as several length buckets', () => {
    const rows: TrainRow[] = [3, 12, 4, 10].map((length, i) => {
      const tokenIds = Array.from({ length }, (_, j) => (j === length - 1 ? (i % 2 ? GOOD : BAD) : 2 + ((i + j) % 5)));
      const mask = tokenIds.map((_, j) => j === length - 1);
      return {
        tokenIds,
        mask,
        logprobs: mask.map((m) => (m ? -1.1 : 0)),
        advantages: mask.map((m) => (m ? (i % 2 ? 1 : -0.5) : 0)),
      };
    });
    const policy = PolicyConfigSchema.parse({ ...config, contextLength: 16 });
    const one = new Trainer({ policy, trainer: { lr: 1e-2, refKlTau: 0.05, minBucketRows: 100 } });
    const many = new Trainer({ policy, trainer: { lr: 1e-2, refKlTau: 0.05, minBucketRows: 1 } });
    const a = one.trainStep(rows);
    const b = many.trainStep(rows);
    expect(a.buckets).toBe(1);
    expect(b.buckets).toBe(2);
    expect(b.paddedTokens).toBeLessThan(a.paddedTokens);
    expect(b.loss).toBeCloseTo(a.loss, 5);
    expect(b.gradNorm).toBeCloseTo(a.gradNorm, 5);
    const wa = one.getWeights();
    const wb = many.getWeights();
    let maxDiff = 0;
    for (const [i, w] of wa.entries())
      for (const [j, x] of w.data.entries()) maxDiff = Math.max(maxDiff, Math.abs(x - (wb[i]?.data[j] as number)));
    expect(maxDiff).toBeLessThan(1e-5);
    one.dispose();
    many.dispose();
  });

  it('a batch without loss tokens takes a zero-gradient step (no loss, no gradient norm)', () => {
    const trainer = new Trainer({ policy: config, trainer: { lr: 1e-2, weightDecay: 0 } });
    const before = trainer.getWeights();
    const rows = batch(trainer, 8, 5).map((r) => ({ ...r, mask: r.mask.map(() => false) }));
    const m = trainer.trainStep(rows);
    expect(m.tokens).toBe(0);
    expect(m.loss).toBe(0);
    expect(m.gradNorm).toBe(0);
    expect(m.flops).toBe(0);
    const after = trainer.getWeights();
    for (const [i, w] of before.entries()) expect(Array.from(after[i]?.data ?? [])).toEqual(Array.from(w.data));
    trainer.dispose();
  });
});

describe('policyLoss', () => {
  // Logits, targets, inference logprobs and advantages chosen so that both DPPO masks fire on some tokens.
  const n = 24;
  const width = 6;
  const logits = Float32Array.from({ length: n * width }, (_, i) => 2 * Math.sin(i * 1.37));
  const targets = Int32Array.from({ length: n }, (_, i) => (i * 5) % width);
  const inference = Float32Array.from({ length: n }, (_, i) => -0.2 - (2.5 * ((i * 7) % 11)) / 11);
  const advantages = Float32Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 0.7 : i % 3 === 1 ? -1.3 : 0));
  for (const [temperature, refKlTau, allowed] of [
    [1, 0.05, null],
    [0.7, 0.05, [1, 1, 0, 1, 1, 0]],
    [1.3, 0, null],
  ] as const) {
    it(`gives the documented loss and metrics (temperature ${temperature}, refKlTau ${refKlTau}, ${allowed ? 'an allowed mask' : "the output tokens' columns"})`, () => {
      const config = TrainerConfigSchema.parse({ temperature, advTau: 0.9, klTau: 0.02 });
      const denom = 30;
      const logRefSize = Math.log(4);
      // The formula in double precision, token by token.
      let rl = 0;
      let kl = 0;
      let entropy = 0;
      let mismatch = 0;
      let masked = 0;
      for (let t = 0; t < n; t++) {
        const z = Array.from(logits.subarray(t * width, (t + 1) * width), (x) => x / temperature);
        const top = Math.max(...z);
        const lse = top + Math.log(z.reduce((a, x) => a + Math.exp(x - top), 0));
        const lp = z.map((x) => x - lse);
        const logpi = lp[targets[t] as number] as number;
        const logr = logpi - (inference[t] as number);
        const gap = Math.exp(logpi) - Math.exp(inference[t] as number);
        const a = advantages[t] as number;
        const m = a > 0 ? (gap > config.dppoMaskHigh ? 1 : 0) : gap < -config.dppoMaskLow ? 1 : 0;
        masked += m;
        rl += -(1 - m) * a * config.advTau * Math.exp(logr) + config.klTau * logr * logr;
        kl += lp.reduce((s, l, v) => s + (allowed ? (allowed[v] as number) : 1) * Math.exp(l) * (l + logRefSize), 0);
        entropy -= lp.reduce((s, l) => s + Math.exp(l) * l, 0);
        mismatch += Math.exp(logr) - 1 - logr;
      }
      const expected = [
        rl / denom + refKlTau * (kl / denom),
        rl / denom,
        kl / denom,
        entropy / denom,
        mismatch / denom,
        masked / denom,
      ];
      expect(masked).toBeGreaterThan(0);
      const got = tf.tidy(() => {
        const { loss, metrics } = policyLoss(tf.tensor2d(logits, [n, width]), {
          targets: tf.tensor1d(targets, 'int32'),
          inferenceLogprobs: tf.tensor1d(inference),
          advantages: tf.tensor1d(advantages),
          denom,
          refKlTau,
          config,
          logRefSize,
          allowed: allowed ? tf.tensor1d([...allowed]) : null,
        });
        return [loss, ...metrics].map((x) => x.dataSync()[0] as number);
      });
      got.forEach((g, i) => {
        expect(Math.abs(g - (expected[i] as number))).toBeLessThan(1e-5 * Math.max(1, Math.abs(expected[i] as number)));
      });
    });

    it(`grad() gives tfjs's autodiff gradient of the loss (temperature ${temperature}, refKlTau ${refKlTau}, ${allowed ? 'an allowed mask' : "the output tokens' columns"})`, () => {
      tf.tidy(() => {
        const config = TrainerConfigSchema.parse({ temperature, advTau: 0.9, klTau: 0.02 });
        const inputs = {
          targets: tf.tensor1d(targets, 'int32'),
          inferenceLogprobs: tf.tensor1d(inference),
          advantages: tf.tensor1d(advantages),
          denom: 30,
          refKlTau,
          config,
          logRefSize: Math.log(4),
          allowed: allowed ? tf.tensor1d([...allowed]) : null,
        };
        const head = tf.tensor2d(logits, [n, width]);
        const theirs = tf.grad((h) => policyLoss(h as tf.Tensor2D, inputs).loss)(head);
        const ours = policyLoss(head, inputs).grad();
        const diff = tf.max(tf.abs(tf.sub(ours, theirs))).dataSync()[0] as number;
        const scale = tf.max(tf.abs(theirs)).dataSync()[0] as number;
        expect(scale).toBeGreaterThan(1e-3);
        expect(diff / scale).toBeLessThan(1e-6);
      });
    });
  }
});
