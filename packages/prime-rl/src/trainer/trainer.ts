import * as tf from '@tensorflow/tfjs';
import type { NamedWeight, PolicyConfig } from '../policy/config.ts';
import { PolicyModel } from '../policy/model.ts';
import {
  type StepOptions,
  type TrainerConfig,
  type TrainerConfigInput,
  TrainerConfigSchema,
  type TrainMetrics,
  type TrainRow,
} from './config.ts';

/** Identity whose gradient is zero (tfjs has no stopGradient). */
const stopGradient = tf.customGrad((x, save) => {
  void save;
  return { value: tf.clone(x as tf.Tensor), gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy) };
}) as (x: tf.Tensor) => tf.Tensor;

/** AdamW moments and step count, as plain data (for checkpoints). */
export interface OptimizerState {
  step: number;
  m: NamedWeight[];
  v: NamedWeight[];
}

/**
 * The policy trainer: one optimizer step per batch with the prime-rl default loss
 *
 *   L = Σ_tok [ −[¬masked]·advTau·A·r + klTau·log²r ] / N  +  refKlTau · Σ_tok KL(π‖ρ) / N
 *
 * where r = π/μ against the inference logprobs μ, `masked` is the DPPO trust region by the sign
 * of A (A>0: π−μ > high; else π−μ < −low), N the number of loss tokens in the batch, and ρ the
 * uniform distribution over the model's output tokens. AdamW, global grad-norm clip.
 */
export class Trainer {
  readonly model: PolicyModel;
  readonly config: TrainerConfig;
  private readonly m: tf.Variable[];
  private readonly v: tf.Variable[];
  private readonly decays: boolean[];
  private readonly allowed: tf.Tensor1D;
  private readonly logRefSize: number;
  step = 0;

  constructor(options: {
    policy: PolicyConfig;
    weights?: NamedWeight[];
    trainer?: TrainerConfigInput;
    optimizer?: OptimizerState;
  }) {
    this.config = TrainerConfigSchema.parse(options.trainer ?? {});
    this.model = new PolicyModel({ config: options.policy, ...(options.weights ? { weights: options.weights } : {}) });
    const weights = this.model.getWeights();
    this.decays = weights.map((w) => w.shape.length === 2 && !w.name.endsWith('_emb'));
    const state = options.optimizer;
    this.m = this.model.variables.map((x, i) =>
      tf.variable(state ? tf.tensor(state.m[i]?.data as Float32Array, x.shape) : tf.zerosLike(x), false),
    );
    this.v = this.model.variables.map((x, i) =>
      tf.variable(state ? tf.tensor(state.v[i]?.data as Float32Array, x.shape) : tf.zerosLike(x), false),
    );
    this.step = state?.step ?? 0;
    const allowedIds = options.policy.outputTokens ?? Array.from({ length: options.policy.vocabSize }, (_, i) => i);
    const allowed = new Float32Array(options.policy.vocabSize);
    for (const id of allowedIds) allowed[id] = 1;
    this.allowed = tf.keep(tf.tensor1d(allowed));
    this.logRefSize = Math.log(allowedIds.length);
  }

  /**
   * One optimizer step on a batch of sequences. Rows are sorted by length and cut into buckets,
   * each padded to its own longest row (a multiple of 8), so one long sequence (a re-asked seat)
   * does not pad the whole batch; the buckets' gradients are summed (the loss is normalised by the
   * loss tokens of the whole batch, so the sum is the batch gradient). `lr`, `refKlTau` and `beta1`
   * override the configured values for this step (schedules).
   */
  trainStep(rows: readonly TrainRow[], options: StepOptions = {}): TrainMetrics {
    const started = performance.now();
    const cfg = this.config;
    const lr = options.lr ?? cfg.lr;
    const refKlTau = options.refKlTau ?? cfg.refKlTau;
    let n = 0;
    for (const row of rows) for (let j = 1; j < row.tokenIds.length; j++) if (row.mask[j]) n++;
    const denom = Math.max(n, 1);
    const buckets = lengthBuckets(rows, { context: this.model.config.contextLength, minRows: cfg.minBucketRows });
    let flops = 0;
    let paddedTokens = 0;
    const out = tf.tidy(() => {
      let total: tf.Tensor[] | null = null;
      let sums: tf.Scalar[] | null = null;
      for (const bucket of buckets) {
        const { time } = bucket;
        flops += stepFlops(this.model.config, bucket.rows.length, time);
        paddedTokens += bucket.rows.length * time;
        const { value, grads, metrics } = this.bucketGradients(bucket.rows, time, denom, refKlTau);
        const gradList = this.model.variables.map((v) => grads[v.name] as tf.Tensor);
        total = total ? total.map((g, i) => tf.add(g, gradList[i] as tf.Tensor)) : gradList;
        const scalars = [value, ...metrics];
        sums = sums ? sums.map((x, i) => tf.add(x, scalars[i] as tf.Scalar)) : scalars;
      }
      if (!total || !sums) throw new RangeError('trainStep: empty batch');
      const gradList: tf.Tensor[] = total;
      const gradNorm = tf.sqrt(tf.addN(gradList.map((g) => tf.sum(tf.square(g)))));
      const scale = tf.minimum(1, tf.div(cfg.maxGradNorm, tf.add(gradNorm, 1e-6)));
      this.step++;
      const b2 = cfg.betas[1];
      const b1 = options.beta1 ?? cfg.betas[0];
      const c1 = 1 - b1 ** this.step;
      const c2 = 1 - b2 ** this.step;
      this.model.variables.forEach((w, i) => {
        const g = tf.mul(gradList[i] as tf.Tensor, scale);
        const m = this.m[i] as tf.Variable;
        const v = this.v[i] as tf.Variable;
        m.assign(tf.add(tf.mul(m, b1), tf.mul(g, 1 - b1)));
        v.assign(tf.add(tf.mul(v, b2), tf.mul(tf.square(g), 1 - b2)));
        let update = tf.div(tf.div(m, c1), tf.add(tf.sqrt(tf.div(v, c2)), cfg.eps));
        if (this.decays[i] && cfg.weightDecay > 0) update = tf.add(update, tf.mul(w, cfg.weightDecay));
        w.assign(tf.sub(w, tf.mul(update, lr)));
      });
      return tf.stack([...sums, gradNorm as tf.Scalar]);
    });
    const values = out.dataSync();
    out.dispose();
    const [loss, rlLoss, refKl, entropy, mismatchKl, maskedFraction, gradNorm] = Array.from(values);
    return {
      loss: loss as number,
      rlLoss: rlLoss as number,
      refKl: refKl as number,
      entropy: entropy as number,
      mismatchKl: mismatchKl as number,
      maskedFraction: maskedFraction as number,
      gradNorm: gradNorm as number,
      tokens: n,
      sequences: rows.length,
      paddedLength: Math.max(...buckets.map((b) => b.time)),
      paddedTokens,
      buckets: buckets.length,
      flops,
      ms: performance.now() - started,
    };
  }

  /** Loss (normalised by `denom`, the batch's loss tokens), metrics and gradients of one bucket padded to `time`. */
  private bucketGradients(rows: readonly TrainRow[], time: number, denom: number, refKlTau: number) {
    const cfg = this.config;
    const b = rows.length;
    const tokens = new Int32Array(b * time);
    const targets = new Int32Array(b * (time - 1));
    const mask = new Float32Array(b * (time - 1));
    const infLp = new Float32Array(b * (time - 1));
    const adv = new Float32Array(b * (time - 1));
    rows.forEach((row, i) => {
      if (row.tokenIds.length > time)
        throw new RangeError(`sequence ${i} has ${row.tokenIds.length} tokens, over the context ${time}`);
      tokens.set(row.tokenIds, i * time);
      for (let j = 1; j < row.tokenIds.length; j++) {
        const k = i * (time - 1) + j - 1;
        targets[k] = row.tokenIds[j] as number;
        if (row.mask[j]) {
          mask[k] = 1;
          infLp[k] = row.logprobs[j] as number;
          adv[k] = row.advantages[j] as number;
        }
      }
    });
    const tTokens = tf.tensor2d(tokens, [b, time], 'int32');
    const tTargets = tf.tensor2d(targets, [b, time - 1], 'int32');
    const tMask = tf.tensor2d(mask, [b, time - 1]);
    const tInf = tf.tensor2d(infLp, [b, time - 1]);
    const tAdv = tf.tensor2d(adv, [b, time - 1]);
    const metrics: tf.Scalar[] = [];
    const { value, grads } = tf.variableGrads(() => {
      const logits = this.model.forward(tTokens);
      const head = tf.slice(logits, [0, 0, 0], [b, time - 1, -1]);
      const lp = tf.logSoftmax(cfg.temperature === 1 ? head : tf.div(head, cfg.temperature));
      const onehot = tf.oneHot(tTargets, this.model.config.vocabSize);
      const logpi = tf.sum(tf.mul(lp, onehot), -1);
      const logr = tf.mul(tf.sub(logpi, tInf), tMask);
      const r = tf.exp(logr);
      const dp = stopGradient(tf.sub(tf.exp(logpi), tf.exp(tInf)));
      // step() has a zero gradient, unlike the comparison ops (which have none in tfjs).
      const positive = tf.step(tAdv);
      const masked = tf.add(
        tf.mul(positive, tf.step(tf.sub(dp, cfg.dppoMaskHigh))),
        tf.mul(tf.sub(1, positive), tf.step(tf.sub(-cfg.dppoMaskLow, dp))),
      );
      const keep = tf.mul(tMask, tf.sub(1, masked));
      const rlTok = tf.add(tf.mul(tf.neg(tf.mul(keep, tf.mul(tAdv, cfg.advTau))), r), tf.mul(tf.square(logr), cfg.klTau * 1));
      const rlLoss = tf.div(tf.sum(tf.mul(rlTok, tMask)), denom);
      const p = tf.exp(lp);
      const klTok = tf.sum(tf.mul(tf.mul(p, tf.add(lp, this.logRefSize)), this.allowed), -1);
      const refKl = tf.div(tf.sum(tf.mul(klTok, tMask)), denom);
      const loss = refKlTau > 0 ? tf.add(rlLoss, tf.mul(refKl, refKlTau)) : rlLoss;
      const entropy = tf.div(tf.sum(tf.mul(tf.neg(tf.sum(tf.mul(p, lp), -1)), tMask)), denom);
      const mismatch = tf.div(tf.sum(tf.mul(tf.sub(tf.sub(r, 1), logr), tMask)), denom);
      const maskedFrac = tf.div(tf.sum(tf.mul(masked, tMask)), denom);
      metrics.push(...([rlLoss, refKl, entropy, mismatch, maskedFrac].map((x) => tf.keep(x)) as tf.Scalar[]));
      return loss as tf.Scalar;
    }, this.model.variables);
    return { value, grads, metrics };
  }

  getWeights(): NamedWeight[] {
    return this.model.getWeights();
  }

  optimizerState(): OptimizerState {
    const names = this.model.getWeights();
    const dump = (vars: tf.Variable[]) =>
      vars.map((x, i) => ({ name: names[i]?.name ?? '', shape: x.shape, data: new Float32Array(x.dataSync() as Float32Array) }));
    return { step: this.step, m: dump(this.m), v: dump(this.v) };
  }

  dispose(): void {
    this.model.dispose();
    for (const x of [...this.m, ...this.v]) x.dispose();
    this.allowed.dispose();
  }
}

/**
 * Cuts rows into buckets by length: sorted by length, each bucket padded to its longest row
 * rounded up to a multiple of 8 (at most `context`); a bucket with fewer than `minRows` rows is
 * merged into the next longer one (each bucket costs a forward and backward pass of its own).
 */
export function lengthBuckets(
  rows: readonly TrainRow[],
  options: { context: number; minRows: number },
): { time: number; rows: TrainRow[] }[] {
  const pad = (n: number) => Math.min(options.context, Math.ceil(n / 8) * 8);
  const sorted = [...rows].sort((a, b) => a.tokenIds.length - b.tokenIds.length);
  const buckets: { time: number; rows: TrainRow[] }[] = [];
  for (const row of sorted) {
    const time = Math.max(pad(row.tokenIds.length), 2);
    const last = buckets.at(-1);
    if (last && (last.time === time || last.rows.length < options.minRows)) {
      last.rows.push(row);
      last.time = Math.max(last.time, time);
    } else buckets.push({ time, rows: [row] });
  }
  // A short last bucket joins the one before it.
  const tail = buckets.at(-1);
  if (buckets.length > 1 && tail && tail.rows.length < options.minRows) {
    buckets.pop();
    const prev = buckets.at(-1) as { time: number; rows: TrainRow[] };
    prev.rows.push(...tail.rows);
    prev.time = Math.max(prev.time, tail.time);
  }
  return buckets;
}

/** Matmul FLOPs of one training step (forward ×3 for forward + backward). */
export function stepFlops(config: PolicyConfig, batch: number, time: number): number {
  const { dModel: d, vocabSize: v, ffnMult, layers } = config;
  const tokens = batch * time;
  const perLayer = 2 * tokens * (d * 3 * d + d * d + 2 * d * d * ffnMult) + 2 * 2 * batch * time * time * d;
  const forward = 2 * tokens * v * d + layers * perLayer + 2 * tokens * d * v;
  return 3 * forward;
}
