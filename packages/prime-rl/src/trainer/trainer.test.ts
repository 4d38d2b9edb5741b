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
      expected.forEach((e, i) => {
        expect(Math.abs((got[i] as number) - e)).toBeLessThan(1e-5 * Math.max(1, Math.abs(e)));
      });
      // Without ce and ref_kl streams those components and their metric are 0.
      expect(got.slice(expected.length)).toEqual([0, 0, 0]);
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

describe('policyLoss with weight streams', () => {
  // Eight loss tokens: rl on 0–4 (weights 1, 0.5, 1, 2, 1), ce on 3, 5, 6 (weights 1, 0.25, 1),
  // ref_kl on 6, 7 (weights 1, 0.5): token 3 is in rl and ce, token 6 in ce and ref_kl.
  const n = 8;
  const width = 5;
  const logits = Float32Array.from({ length: n * width }, (_, i) => 1.5 * Math.cos(i * 0.91));
  const targets = Int32Array.from({ length: n }, (_, i) => (i * 3) % width);
  // Token 6 inside the ref_kl trust region (μ = 0.05), token 7 outside it (μ = 0.95, π far below).
  const inference = Float32Array.from({ length: n }, (_, i) =>
    i === 6 ? -3 : i === 7 ? -0.05 : -0.4 - (1.7 * ((i * 5) % 7)) / 7,
  );
  const advantages = Float32Array.from([0.8, -1.1, 0, 0.5, -0.3, 0, 0, 0]);
  const rlWeights = [1, 0.5, 1, 2, 1, 0, 0, 0];
  const ceWeights = [0, 0, 0, 1, 0, 0.25, 1, 0];
  const refKlWeights = [0, 0, 0, 0, 0, 0, 1, 0.5];
  const teacher = [0, 0, 0, 0, 0, 0, -0.05, -0.1];
  // Batch-wide counts bigger than this bucket's, as when the batch has other buckets.
  const denoms = { rl: 7, ce: 5, refKl: 3, tokens: 11 };
  const config = TrainerConfigSchema.parse({ temperature: 0.8, advTau: 0.9, klTau: 0.02 });
  const inputs = () => ({
    targets: tf.tensor1d(targets, 'int32'),
    inferenceLogprobs: tf.tensor1d(inference),
    advantages: tf.tensor1d(advantages),
    denom: denoms.rl,
    tokens: denoms.tokens,
    rlWeights: tf.tensor1d(rlWeights),
    ce: { weights: tf.tensor1d(ceWeights), denom: denoms.ce },
    refKl: { weights: tf.tensor1d(refKlWeights), logprobs: tf.tensor1d(teacher), denom: denoms.refKl },
    refKlTau: 0.05,
    config,
    logRefSize: Math.log(width),
    allowed: null,
  });

  it('sums each component over its own tokens and divides it by its own token count (a hand computation)', () => {
    let rl = 0;
    let ce = 0;
    let ref = 0;
    let teacherKl = 0;
    let uniform = 0;
    for (let t = 0; t < n; t++) {
      const z = Array.from(logits.subarray(t * width, (t + 1) * width), (x) => x / config.temperature);
      const top = Math.max(...z);
      const lse = top + Math.log(z.reduce((a, x) => a + Math.exp(x - top), 0));
      const lp = z.map((x) => x - lse);
      const logpi = lp[targets[t] as number] as number;
      const logr = logpi - (inference[t] as number);
      const gap = Math.exp(logpi) - Math.exp(inference[t] as number);
      const a = advantages[t] as number;
      const masked = a > 0 ? gap > 0.2 : gap < -0.2;
      rl += (rlWeights[t] as number) * (-(masked ? 0 : 1) * a * config.advTau * Math.exp(logr) + config.klTau * logr * logr);
      uniform += (rlWeights[t] as number) * lp.reduce((s, l) => s + Math.exp(l) * (l + Math.log(width)), 0);
      ce += (ceWeights[t] as number) * -logpi;
      const teacherGap = (teacher[t] as number) - logpi;
      ref += (refKlWeights[t] as number) * (-(gap < -0.2 ? 0 : 1) * teacherGap * Math.exp(logr) + 1e-3 * logr * logr);
      if (refKlWeights[t] !== 0) teacherKl += -teacherGap;
    }
    const expected = {
      loss: rl / denoms.rl + 0.05 * (uniform / denoms.rl) + ce / denoms.ce + ref / denoms.refKl,
      rlLoss: rl / denoms.rl,
      ceLoss: ce / denoms.ce,
      teacherLoss: ref / denoms.refKl,
      teacherKl: teacherKl / denoms.refKl,
    };
    const got = tf.tidy(() => {
      const { loss, metrics } = policyLoss(tf.tensor2d(logits, [n, width]), inputs());
      const value = (x: tf.Tensor) => x.dataSync()[0] as number;
      return {
        loss: value(loss),
        rlLoss: value(metrics[0] as tf.Tensor),
        ceLoss: value(metrics[5] as tf.Tensor),
        teacherLoss: value(metrics[6] as tf.Tensor),
        teacherKl: value(metrics[7] as tf.Tensor),
      };
    });
    for (const key of Object.keys(expected) as (keyof typeof expected)[])
      expect(Math.abs(got[key] - expected[key]), key).toBeLessThan(1e-5 * Math.max(1, Math.abs(expected[key])));
    expect(expected.ceLoss).toBeGreaterThan(0);
    expect(Math.abs(expected.teacherLoss)).toBeGreaterThan(1e-2);
  });

  it("grad() gives tfjs's autodiff gradient of the loss with all three components", () => {
    tf.tidy(() => {
      const head = tf.tensor2d(logits, [n, width]);
      const theirs = tf.grad((h) => policyLoss(h as tf.Tensor2D, inputs()).loss)(head);
      const ours = policyLoss(head, inputs()).grad();
      const diff = tf.max(tf.abs(tf.sub(ours, theirs))).dataSync()[0] as number;
      const scale = tf.max(tf.abs(theirs)).dataSync()[0] as number;
      expect(scale).toBeGreaterThan(1e-3);
      expect(diff / scale).toBeLessThan(1e-6);
    });
  });
});

describe('Trainer weight streams', () => {
  beforeAll(async () => {
    await initTfBackend({ prefer: 'wasm' });
  });

  const rlRow = (token: number, advantage: number): TrainRow => ({
    tokenIds: [2, 6, 4, token],
    mask: [false, false, false, true],
    logprobs: [0, 0, 0, Math.log(1 / 3)],
    advantages: [0, 0, 0, advantage],
  });
  /** A supervised row: the reply token under ce (weight 1) and no rl token. */
  const ceRow = (token: number): TrainRow => ({
    tokenIds: [2, 6, 4, token],
    mask: [false, false, false, true],
    logprobs: [0, 0, 0, 0],
    advantages: [0, 0, 0, 0],
    rlWeights: [0, 0, 0, 0],
    ceWeights: [0, 0, 0, 1],
  });

  it("counts each component's tokens on its own and its loss is not diluted by the others'", () => {
    const fresh = () => new Trainer({ policy: config, trainer: { lr: 1e-3, weightDecay: 0 } });
    const p = probs(fresh());
    // One ce token beside 1 rl token, then beside 5: the ce component stays −log π(GOOD) (÷ 1).
    for (const rlCount of [1, 5]) {
      const trainer = fresh();
      const rows = [ceRow(GOOD), ...Array.from({ length: rlCount }, (_, i) => rlRow(i % 2 ? BAD : 5, 0.5))];
      const m = trainer.trainStep(rows);
      expect(m.ceTokens).toBe(1);
      expect(m.rlTokens).toBe(rlCount);
      expect(m.refKlTokens).toBe(0);
      expect(m.tokens).toBe(rlCount + 1);
      expect(m.ceLoss).toBeCloseTo(-Math.log(p[GOOD] as number), 5);
      trainer.dispose();
    }
  });

  it('absent streams train exactly as rl weight 1 on the mask', () => {
    const plain = new Trainer({ policy: config, trainer: { lr: 1e-2, weightDecay: 0 } });
    const streamed = new Trainer({ policy: config, trainer: { lr: 1e-2, weightDecay: 0 } });
    const rows = batch(plain, 16, 3);
    const a = plain.trainStep(rows);
    const b = streamed.trainStep(rows.map((r) => ({ ...r, rlWeights: r.mask.map(() => 1), ceWeights: r.mask.map(() => 0) })));
    expect(b.loss).toBeCloseTo(a.loss, 6);
    expect(b.rlTokens).toBe(a.rlTokens);
    const wa = plain.getWeights();
    const wb = streamed.getWeights();
    for (const [i, w] of wa.entries())
      for (const [j, x] of w.data.entries()) expect(Math.abs(x - (wb[i]?.data[j] as number))).toBeLessThan(1e-6);
    plain.dispose();
    streamed.dispose();
  });

  it('ce raises the probability of the given token; ref_kl moves the policy toward the teacher', () => {
    const trainer = new Trainer({ policy: config, trainer: { lr: 3e-2, weightDecay: 0 } });
    const before = probs(trainer)[GOOD] as number;
    for (let s = 0; s < 10; s++) trainer.trainStep([ceRow(GOOD)]);
    expect(probs(trainer)[GOOD] as number).toBeGreaterThan(before + 0.2);
    trainer.dispose();
    // A teacher that puts log 0.9 on BAD: the student's samples of BAD get a positive pull.
    const student = new Trainer({ policy: config, trainer: { lr: 3e-2, weightDecay: 0 } });
    const start = probs(student)[BAD] as number;
    for (let s = 0; s < 10; s++) {
      const p = probs(student);
      const rows = [GOOD, BAD, 5].map((token) => ({
        tokenIds: [2, 6, 4, token],
        mask: [false, false, false, true],
        logprobs: [0, 0, 0, Math.log(p[token] as number)],
        advantages: [0, 0, 0, 0],
        rlWeights: [0, 0, 0, 0],
        refKlWeights: [0, 0, 0, p[token] as number],
        refLogprobs: [0, 0, 0, Math.log(token === BAD ? 0.9 : 0.05)],
      }));
      const m = student.trainStep(rows);
      expect(m.refKlTokens).toBe(3);
    }
    expect(probs(student)[BAD] as number).toBeGreaterThan(start + 0.2);
    student.dispose();
  });

  it('refuses a ce target outside the output tokens, naming it', () => {
    const trainer = new Trainer({ policy: config, trainer: {} });
    expect(() => trainer.trainStep([ceRow(3)])).toThrow(/token 3, which is not one of the policy's output tokens/);
    expect(() => trainer.trainStep([{ ...ceRow(GOOD), ceWeights: [1] }])).toThrow(/ceWeights has 1 entries/);
    expect(() => trainer.trainStep([{ ...rlRow(GOOD, 1), refKlWeights: [0, 0, 0, 1] }])).toThrow(
      /refKlWeights without refLogprobs/,
    );
    trainer.dispose();
  });
});
