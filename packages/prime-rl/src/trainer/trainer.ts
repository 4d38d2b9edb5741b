import * as tf from '@tensorflow/tfjs';
import { ConfigError, TrainerError } from '@troupe/verifiers';
import type { NamedWeight, PolicyConfig } from '../policy/config.ts';
import { K } from '../policy/kernels.ts';
import { PolicyModel } from '../policy/model.ts';
import {
  type StepOptions,
  type TrainerConfig,
  type TrainerConfigInput,
  TrainerConfigSchema,
  type TrainMetrics,
  type TrainRow,
} from './config.ts';
import type { OptimizerState } from './optimizer-state.ts';

/** Identity whose gradient is zero (tfjs has no stopGradient). */
const stopGradient = tf.customGrad((x, save) => {
  void save;
  return { value: tf.clone(x as tf.Tensor), gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy) };
}) as (x: tf.Tensor) => tf.Tensor;

export type { OptimizerState } from './optimizer-state.ts';

/**
 * The policy trainer: one optimizer step per batch with the prime-rl default loss
 *
 *   L = Σ_tok [ −[¬masked]·advTau·A·r + klTau·log²r ] / N  +  refKlTau · Σ_tok KL(π‖ρ) / N
 *
 * where r = π/μ against the inference logprobs μ, `masked` is the DPPO trust region by the sign
 * of A (A>0: π−μ > high; else π−μ < −low), N the number of loss tokens in the batch, and ρ the
 * uniform distribution over the model's output tokens. AdamW, global grad-norm clip.
 *
 * A row may carry prime-rl's weight streams (`rlWeights`, `ceWeights`, `refKlWeights` with
 * `refLogprobs`): the loss is then three components, each summed over its own tokens and divided
 * by its own batch-wide token count (see {@link policyLoss}); without streams it is the rl one.
 */
export class Trainer {
  readonly model: PolicyModel;
  readonly config: TrainerConfig;
  /** AdamW moments of every weight, flattened in weight order into one vector each (one update for all). */
  private readonly m: tf.Variable;
  private readonly v: tf.Variable;
  /** 1 on the elements of weights that decay (matrices other than the embeddings), else 0. */
  private readonly decayMask: tf.Tensor1D;
  private readonly sizes: number[];
  private readonly allowed: tf.Tensor1D;
  private readonly logRefSize: number;
  /** The output token ids, ascending: the loss reads the head at these columns only. */
  private readonly columns: number[];
  private readonly columnOf: Map<number, number>;
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
    this.sizes = weights.map((w) => w.data.length);
    const total = this.sizes.reduce((a, b) => a + b, 0);
    const decay = new Float32Array(total);
    let offset = 0;
    for (const w of weights) {
      if (w.shape.length === 2 && !w.name.endsWith('_emb')) decay.fill(1, offset, offset + w.data.length);
      offset += w.data.length;
    }
    this.decayMask = tf.keep(tf.tensor1d(decay));
    const state = options.optimizer;
    const flat = (parts: NamedWeight[] | undefined, what: string) => {
      const out = new Float32Array(total);
      if (!parts) return out;
      if (parts.length !== weights.length)
        throw new ConfigError(`optimizer.${what}: ${parts.length} tensors for ${weights.length} weights`, {
          path: `optimizer.${what}`,
        });
      let at = 0;
      parts.forEach((part, i) => {
        if (part.data.length !== this.sizes[i])
          throw new ConfigError(`optimizer.${what}[${i}] (${part.name}): ${part.data.length} values, expected ${this.sizes[i]}`, {
            path: `optimizer.${what}[${i}]`,
          });
        out.set(part.data, at);
        at += part.data.length;
      });
      return out;
    };
    this.m = tf.variable(tf.tensor1d(flat(state?.m, 'm')), false);
    this.v = tf.variable(tf.tensor1d(flat(state?.v, 'v')), false);
    this.step = state?.step ?? 0;
    const allowedIds = options.policy.outputTokens ?? Array.from({ length: options.policy.vocabSize }, (_, i) => i);
    const allowed = new Float32Array(options.policy.vocabSize);
    for (const id of allowedIds) allowed[id] = 1;
    this.allowed = tf.keep(tf.tensor1d(allowed));
    this.logRefSize = Math.log(allowedIds.length);
    this.columns = [...new Set(allowedIds)].sort((a, b) => a - b);
    this.columnOf = new Map(this.columns.map((id, j) => [id, j]));
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
    const counts = lossTokenCounts(rows);
    // Each component over its own batch-wide token count, at least 1 (prime-rl:
    // `src/prime_rl/trainer/rl/train.py:307-323` at 559b447).
    const scales: ComponentScales = {
      rl: Math.max(counts.rl, 1),
      ce: Math.max(counts.ce, 1),
      refKl: Math.max(counts.refKl, 1),
      tokens: Math.max(counts.tokens, 1),
    };
    const buckets = lengthBuckets(rows, { context: this.model.config.contextLength, minRows: cfg.minBucketRows });
    let flops = 0;
    let paddedTokens = 0;
    const out = tf.tidy(() => {
      let total: tf.Tensor[] | null = null;
      let sums: tf.Scalar[] | null = null;
      for (const bucket of buckets) {
        const { time } = bucket;
        paddedTokens += bucket.rows.length * time;
        const result = this.bucketGradients(bucket.rows, time, scales, refKlTau);
        if (!result) continue;
        const { value, grads, metrics } = result;
        flops += result.flops;
        total = total ? total.map((g, i) => tf.add(g, grads[i] as tf.Tensor)) : grads;
        const scalars = [value, ...metrics];
        sums = sums ? sums.map((x, i) => tf.add(x, scalars[i] as tf.Scalar)) : scalars;
      }
      if (rows.length === 0) throw new TrainerError('trainStep: empty batch');
      // No loss token anywhere: a zero gradient (the moments still decay and weights still decay).
      total ??= this.model.variables.map((v) => tf.zerosLike(v));
      sums ??= Array.from({ length: 1 + LOSS_METRICS }, () => tf.scalar(0));
      const gradNorm = this.applyAdamW(total, lr, options.beta1);
      return tf.stack([...sums, gradNorm as tf.Scalar]);
    });
    const values = Array.from(out.dataSync());
    out.dispose();
    return {
      ...namedLossValues(values),
      tokens: counts.tokens,
      rlTokens: counts.rl,
      ceTokens: counts.ce,
      refKlTokens: counts.refKl,
      sequences: rows.length,
      paddedLength: Math.max(...buckets.map((b) => b.time)),
      paddedTokens,
      buckets: buckets.length,
      flops,
      ms: performance.now() - started,
    };
  }

  /**
   * One AdamW update (global grad-norm clip) from the summed gradients, on all weights at once,
   * flattened in weight order: a dozen kernels per step instead of a dozen per weight (each kernel
   * costs ~10–60 µs of tfjs overhead whatever its size). Returns the gradient norm before clipping.
   */
  private applyAdamW(gradients: tf.Tensor[], lr: number, beta1: number | undefined): tf.Scalar {
    const cfg = this.config;
    // The kernels through the engine (K): the same values as tfjs's ops, without their wrappers.
    const flatten = (xs: tf.Tensor[]) => K.concat<tf.Tensor1D>(xs.map((x) => K.reshape(x, [x.size])));
    const grad = flatten(gradients);
    const gradNorm = K.sqrt(K.sum<tf.Scalar>(K.square(grad), 0, false));
    const scale = K.minimum(1, K.div(cfg.maxGradNorm, K.add(gradNorm, 1e-6)));
    this.step++;
    const b2 = cfg.betas[1];
    const b1 = beta1 ?? cfg.betas[0];
    const c1 = 1 - b1 ** this.step;
    const c2 = 1 - b2 ** this.step;
    const g = K.mul(grad, scale);
    this.m.assign(K.add(K.mul(this.m, b1), K.mul(g, 1 - b1)));
    this.v.assign(K.add(K.mul(this.v, b2), K.mul(K.square(g), 1 - b2)));
    const weights = flatten(this.model.variables);
    let update = K.div(K.div(this.m, c1), K.add(K.sqrt(K.div(this.v, c2)), cfg.eps));
    if (cfg.weightDecay > 0) update = K.add(update, K.mul(K.mul(weights, cfg.weightDecay), this.decayMask));
    // The new weights read back once and cut on the JavaScript side: the wasm backend's split
    // copies the whole vector out of its heap for each of its pieces.
    const next = K.sub(weights, K.mul(update, lr)).dataSync() as Float32Array;
    let at = 0;
    this.model.variables.forEach((w, i) => {
      const size = this.sizes[i] as number;
      w.assign(tf.tensor(next.subarray(at, at + size), w.shape, 'float32'));
      at += size;
    });
    return gradNorm as tf.Scalar;
  }

  /**
   * Loss (each component normalised by its batch-wide `scales`), metrics and gradients of one
   * bucket padded to `time`, or null when the bucket holds no loss token (its gradient is zero).
   * The output head and the loss run on the loss tokens only, in row order.
   */
  private bucketGradients(rows: readonly TrainRow[], time: number, scales: ComponentScales, refKlTau: number) {
    const cfg = this.config;
    const b = rows.length;
    const packed = packBucket(rows, time);
    const { tokens, positions, targets } = packed;
    if (positions.length === 0) return null;
    // The loss over the output tokens' columns only (the others have probability 0 and no
    // gradient), unless a target lies outside them (then its logit is the masked one, as before).
    const narrow = targets.every((t) => this.columnOf.has(t));
    if (!narrow) this.checkSupervisedTargets(packed);
    const columns = narrow ? this.columns : undefined;
    const width = columns?.length ?? this.model.config.vocabSize;
    // Typed arrays: tfjs flattens and converts a plain array element by element.
    const vector = (values: number[]) => tf.tensor1d(Float32Array.from(values));
    const tTargets = tf.tensor1d(
      Int32Array.from(targets, (t) => (narrow ? (this.columnOf.get(t) as number) : t)),
      'int32',
    );
    const at = Int32Array.from(positions);
    // The model's forward pass and its explicit backward, and the loss's explicit gradient (no tape).
    const model = this.model.logitsWithBackward(tokens, [b, time], at, columns);
    const modelRows = this.model.lastRows;
    const {
      loss: value,
      metrics,
      grad,
    } = policyLoss(model.logits, {
      targets: tTargets,
      inferenceLogprobs: vector(packed.infLp),
      advantages: vector(packed.adv),
      denom: scales.rl,
      tokens: scales.tokens,
      rlWeights: packed.streams ? vector(packed.rl) : null,
      ce: packed.hasCe ? { weights: vector(packed.ce), denom: scales.ce } : null,
      refKl: packed.hasRefKl ? { weights: vector(packed.refKl), logprobs: vector(packed.refLp), denom: scales.refKl } : null,
      refKlTau,
      config: cfg,
      logRefSize: this.logRefSize,
      allowed: narrow ? null : this.allowed,
    });
    const grads = model.backward(grad());
    const flops = stepFlops(this.model.config, { rows: modelRows, time, outputs: positions.length, columns: width });
    return { value, grads, metrics, flops };
  }

  /**
   * Refuses a ce or ref_kl target outside the policy's output tokens: its probability is 0 (the
   * head masks it), so its NLL is unbounded and no step can teach it. rl targets keep the old
   * rule (sampled by the policy, so an output token unless the policy changed shape).
   */
  private checkSupervisedTargets(packed: PackedBucket): void {
    packed.targets.forEach((target, i) => {
      if (this.columnOf.has(target)) return;
      if ((packed.ce[i] ?? 0) !== 0 || (packed.refKl[i] ?? 0) !== 0)
        throw new TrainerError(
          `a ce / ref_kl target is token ${target}, which is not one of the policy's output tokens (its probability is 0); add it to the reply vocabulary`,
        );
    });
  }

  getWeights(): NamedWeight[] {
    return this.model.getWeights();
  }

  optimizerState(): OptimizerState {
    const names = this.model.getWeights();
    const dump = (flat: tf.Variable) => {
      const data = flat.dataSync() as Float32Array;
      let at = 0;
      return names.map(({ name, shape, data: w }) => {
        const part = data.slice(at, at + w.length);
        at += w.length;
        return { name, shape, data: part };
      });
    };
    return { step: this.step, m: dump(this.m), v: dump(this.v) };
  }

  dispose(): void {
    this.model.dispose();
    this.m.dispose();
    this.v.dispose();
    this.decayMask.dispose();
    this.allowed.dispose();
  }
}

/** Number of metrics {@link policyLoss} returns beside the loss. */
const LOSS_METRICS = 8;

/** A step's loss, {@link policyLoss}'s metrics (summed over buckets) and the gradient norm, by name. */
function namedLossValues(values: readonly number[]) {
  const names = [
    'loss',
    'rlLoss',
    'refKl',
    'entropy',
    'mismatchKl',
    'maskedFraction',
    'ceLoss',
    'teacherLoss',
    'teacherKl',
    'gradNorm',
  ] as const;
  return Object.fromEntries(names.map((name, i) => [name, values[i] as number])) as Record<(typeof names)[number], number>;
}

/** The batch-wide normaliser of each loss component (its token count, at least 1) and of the per-token metrics. */
interface ComponentScales {
  rl: number;
  ce: number;
  refKl: number;
  /** Loss tokens of any component (entropy's normaliser). */
  tokens: number;
}

/** What {@link policyLoss} reads besides the logits. */
export interface PolicyLossInputs {
  /** Per loss token, the target's column in the logits (int32). */
  targets: tf.Tensor1D;
  /** Per loss token, the inference logprob μ of the target. */
  inferenceLogprobs: tf.Tensor1D;
  /** Per loss token, the advantage. */
  advantages: tf.Tensor1D;
  /** The batch's rl tokens (mask set, rl weight ≠ 0): the rl component and `refKlTau`'s term are sums over them divided by it. */
  denom: number;
  /** The batch's loss tokens of any component, entropy's normaliser (default `denom`). */
  tokens?: number;
  /** Per loss token, its rl weight (0 = not an rl token); null = 1 on every loss token. */
  rlWeights?: tf.Tensor1D | null;
  /** The ce component: per loss token its weight (0 = not a ce token), and the batch's ce tokens. */
  ce?: { weights: tf.Tensor1D; denom: number } | null;
  /** The ref_kl (teacher) component: per loss token its weight and the teacher's logprob, and the batch's ref_kl tokens. */
  refKl?: { weights: tf.Tensor1D; logprobs: tf.Tensor1D; denom: number } | null;
  refKlTau: number;
  config: TrainerConfig;
  /** log of the number of output tokens (the reference ρ is uniform over them). */
  logRefSize: number;
  /** 1 on the output tokens' columns, 0 elsewhere, when the logits span the whole vocabulary; null when they are the output tokens' columns only. */
  allowed: tf.Tensor1D | null;
}

/** The ±0.2 probability-difference trust region of the ref_kl component (prime-rl `src/prime_rl/trainer/rl/loss.py:221`). */
const REF_KL_MASK_LOW = 0.2;
/** Weight of log²r in the ref_kl component (prime-rl `src/prime_rl/trainer/rl/loss.py:229`). */
const REF_KL_MISMATCH_TAU = 1e-3;

/**
 * The trainer's loss (see {@link Trainer}) of the logits at the loss tokens [N, columns], its
 * metrics [rlLoss, refKl, entropy, mismatchKl, maskedFraction, ceLoss, teacherLoss, teacherKl],
 * and `grad()`, dL/dlogits by an explicit formula over the forward pass's tensors (tfjs's autodiff
 * of `loss` gives the same values up to rounding, with a tape that copies each taped op's inputs
 * and ≈100 kernels more a step). Three components, each over its own token count, as prime-rl's
 * `compute_loss` (`src/prime_rl/trainer/rl/loss.py:285-394` at 559b447):
 *
 *   rl     = Σ w_rl·(−[¬masked]·advTau·A·r + klTau·log²r) / N_rl       (loss.py:143-149)
 *   ce     = Σ w_ce·(−log π) / N_ce                                      (loss.py:252-255)
 *   ref_kl = Σ w_ref·(−[Δp ≥ −0.2]·sg(log π_ref − log π)·r + 1e-3·log²r) / N_ref   (loss.py:220-229)
 *
 * plus refKlTau · Σ w_rl·KL(π‖ρ) / N_rl (troupe's uniform-reference regulariser). The gradient:
 *
 *   dL/dlogπ = w_rl·(−[¬masked]·advTau·A·r + 2·klTau·log r)/N_rl − w_ce/N_ce + w_ref·(−[kept]·g·r + 2e-3·log r)/N_ref,
 *   dL/dlp = dL/dlogπ·onehot + refKlTau·w_rl·p·(lp + log|ρ| + 1)/N_rl,
 *   dL/dz = (dL/dlp − p·Σ dL/dlp)/temperature  (through the log-softmax of z/temperature).
 *
 * The trust-region masks, the probability gap and the teacher gap g have zero gradient.
 */
export function policyLoss(head: tf.Tensor2D, inputs: PolicyLossInputs) {
  // Long: one formula and its explicit gradient, which reads the forward pass's tensors; split, they would travel between functions.
  const { config: cfg, denom, refKlTau, logRefSize, allowed } = inputs;
  const tokens = inputs.tokens ?? denom;
  const tInf = inputs.inferenceLogprobs;
  const tAdv = inputs.advantages;
  const wRl = inputs.rlWeights ?? null;
  const width = head.shape[1];
  // K: the kernels without tfjs's op wrappers (the same values; tfjs's tape still records them).
  const rowSum = (x: tf.Tensor, keepDims = false) => K.sum<tf.Tensor>(x, 1, keepDims);
  const total = (x: tf.Tensor) => K.sum<tf.Scalar>(x, 0, false);
  const weighted = (x: tf.Tensor, w: tf.Tensor | null) => (w ? K.mul(x, w) : x);
  // 1 where a weight is not 0: the tokens a component (or its metrics) counts.
  const present = (w: tf.Tensor) => stopGradient(tf.cast(tf.notEqual(w, 0), 'float32'));
  const lp = tf.logSoftmax(cfg.temperature === 1 ? head : K.div<tf.Tensor2D>(head, cfg.temperature));
  // oneHot is int32: cast once (tfjs's ops cast it at each use; K's kernels take the dtypes as given).
  const onehot = tf.cast(tf.oneHot(inputs.targets, width), 'float32');
  const logpi = rowSum(K.mul(lp, onehot));
  const logr = K.sub(logpi, tInf);
  const r = K.exp(logr);
  const dp = stopGradient(K.sub(K.exp(logpi), K.exp(tInf)));
  // step() has a zero gradient, unlike the comparison ops (which have none in tfjs).
  const positive = K.step(tAdv);
  const masked = K.add(
    K.mul(positive, K.step(K.sub(dp, cfg.dppoMaskHigh))),
    K.mul(K.sub(1, positive), K.step(K.sub(-cfg.dppoMaskLow, dp))),
  );
  const keep = K.sub(1, masked);
  const pull = K.neg(K.mul(keep, K.mul(tAdv, cfg.advTau)));
  const rlTok = weighted(K.add(K.mul(pull, r), K.mul(K.square(logr), cfg.klTau * 1)), wRl);
  const rlLoss = K.div<tf.Scalar>(total(rlTok), denom);
  const p = K.exp(lp);
  const klTerms = K.mul(p, K.add(lp, logRefSize));
  const klTok = weighted(rowSum(allowed ? K.mul(klTerms, allowed) : klTerms), wRl);
  const refKl = K.div<tf.Scalar>(total(klTok), denom);
  let loss = refKlTau > 0 ? K.add<tf.Scalar>(rlLoss, K.mul(refKl, refKlTau)) : rlLoss;
  const entropy = K.div<tf.Scalar>(total(K.neg(rowSum(K.mul(p, lp)))), tokens);
  const rlOn = wRl ? present(wRl) : null;
  const mismatch = K.div<tf.Scalar>(total(weighted(K.sub(K.sub(r, 1), logr), rlOn)), denom);
  const maskedFrac = K.div<tf.Scalar>(total(weighted(masked, rlOn)), denom);
  let ceLoss: tf.Scalar = tf.scalar(0);
  if (inputs.ce) {
    ceLoss = K.div<tf.Scalar>(total(K.mul(K.neg(logpi), inputs.ce.weights)), inputs.ce.denom);
    loss = K.add(loss, ceLoss);
  }
  let teacherLoss: tf.Scalar = tf.scalar(0);
  let teacherKl: tf.Scalar = tf.scalar(0);
  let teacher: { gap: tf.Tensor; kept: tf.Tensor } | null = null;
  if (inputs.refKl) {
    const { weights, logprobs, denom: refDenom } = inputs.refKl;
    const gap = stopGradient(K.sub(logprobs, logpi));
    const kept = K.sub(1, K.step(K.sub(-REF_KL_MASK_LOW, dp)));
    const refTok = K.mul(K.add(K.neg(K.mul(K.mul(kept, gap), r)), K.mul(K.square(logr), REF_KL_MISMATCH_TAU)), weights);
    teacherLoss = K.div<tf.Scalar>(total(refTok), refDenom);
    teacherKl = K.div<tf.Scalar>(total(K.mul(K.neg(gap), present(weights))), refDenom);
    loss = K.add(loss, teacherLoss);
    teacher = { gap, kept };
  }
  const metrics = [rlLoss, refKl, entropy, mismatch, maskedFrac, ceLoss, teacherLoss, teacherKl];
  const grad = (): tf.Tensor2D => {
    let dLogpi = K.div(weighted(K.add(K.mul(pull, r), K.mul(logr, 2 * cfg.klTau)), wRl), denom);
    if (inputs.ce) dLogpi = K.sub(dLogpi, K.div(inputs.ce.weights, inputs.ce.denom));
    if (inputs.refKl && teacher) {
      const pullRef = K.neg(K.mul(K.mul(teacher.kept, teacher.gap), r));
      const dRef = K.mul(K.add(pullRef, K.mul(logr, 2 * REF_KL_MISMATCH_TAU)), inputs.refKl.weights);
      dLogpi = K.add(dLogpi, K.div(dRef, inputs.refKl.denom));
    }
    let dLp = K.mul(onehot, K.reshape(dLogpi, [-1, 1]));
    if (refKlTau > 0) {
      const kl = K.mul(p, K.add(lp, logRefSize + 1));
      const scaled = allowed ? K.mul(kl, allowed) : kl;
      dLp = K.add(dLp, wRl ? K.mul(scaled, K.reshape(K.mul(wRl, refKlTau / denom), [-1, 1])) : K.mul(scaled, refKlTau / denom));
    }
    const dz = K.sub(dLp, K.mul(p, rowSum(dLp, true)));
    return (cfg.temperature === 1 ? dz : K.div(dz, cfg.temperature)) as tf.Tensor2D;
  };
  return { loss, metrics, grad };
}

/** A bucket's rows as model input and, per loss token, what the loss reads (see {@link packBucket}). */
interface PackedBucket {
  tokens: Int32Array;
  positions: number[];
  targets: number[];
  infLp: number[];
  adv: number[];
  /** Per loss token: its rl weight (0 = not an rl token), ce weight, ref_kl weight and teacher logprob. */
  rl: number[];
  ce: number[];
  refKl: number[];
  refLp: number[];
  /** True when some row carries a weight stream (else every loss token is an rl token of weight 1). */
  streams: boolean;
  hasCe: boolean;
  hasRefKl: boolean;
}

/** A row's weight streams and teacher logprobs, each checked against its token count. */
function rowStreams(row: TrainRow, index: number) {
  const n = row.tokenIds.length;
  const check = (name: string, values: readonly number[] | null | undefined) => {
    if (values != null && values.length !== n)
      throw new TrainerError(`sequence ${index}: ${name} has ${values.length} entries but tokenIds has ${n}`);
    return values ?? null;
  };
  const refKl = check('refKlWeights', row.refKlWeights);
  const refLp = check('refLogprobs', row.refLogprobs);
  if (refKl?.some((w) => w !== 0) && !refLp)
    throw new TrainerError(
      `sequence ${index}: refKlWeights without refLogprobs (the ref_kl component needs the teacher's logprobs)`,
    );
  return { rl: check('rlWeights', row.rlWeights), ce: check('ceWeights', row.ceWeights), refKl, refLp };
}

/** Whether token j of a row is in the rl component, with its weight: mask set and rl weight ≠ 0 (absent = 1). */
function rlWeightAt(row: TrainRow, rl: readonly number[] | null, j: number): number {
  return row.mask[j] ? (rl ? (rl[j] as number) : 1) : 0;
}

/**
 * A bucket's rows as model input: tokens [B, T] (row-major, zero-padded) and, for each loss token
 * in row order (a token in the rl, ce or ref_kl component), the position whose logits predict it
 * (row · T + j − 1), the token, its inference logprob, its advantage and its component weights.
 */
function packBucket(rows: readonly TrainRow[], time: number): PackedBucket {
  const tokens = new Int32Array(rows.length * time);
  const out: PackedBucket = {
    tokens,
    positions: [],
    targets: [],
    infLp: [],
    adv: [],
    rl: [],
    ce: [],
    refKl: [],
    refLp: [],
    streams: false,
    hasCe: false,
    hasRefKl: false,
  };
  rows.forEach((row, i) => {
    if (row.tokenIds.length > time)
      throw new TrainerError(`sequence ${i} has ${row.tokenIds.length} tokens, over the context ${time}`);
    tokens.set(row.tokenIds, i * time);
    const streams = rowStreams(row, i);
    if (streams.rl || streams.ce || streams.refKl) out.streams = true;
    for (let j = 1; j < row.tokenIds.length; j++) {
      const rl = rlWeightAt(row, streams.rl, j);
      const ce = streams.ce ? (streams.ce[j] as number) : 0;
      const refKl = streams.refKl ? (streams.refKl[j] as number) : 0;
      if (rl === 0 && ce === 0 && refKl === 0) continue;
      if (ce !== 0) out.hasCe = true;
      if (refKl !== 0) out.hasRefKl = true;
      out.positions.push(i * time + j - 1);
      out.targets.push(row.tokenIds[j] as number);
      out.infLp.push(row.logprobs[j] as number);
      out.adv.push(row.advantages[j] as number);
      out.rl.push(rl);
      out.ce.push(ce);
      out.refKl.push(refKl);
      out.refLp.push(streams.refLp ? (streams.refLp[j] as number) : 0);
    }
  });
  return out;
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

/**
 * Matmul FLOPs one bucket's training step needs (forward, and ×3 for forward + backward): the
 * blocks over `rows` sequences (distinct rows when repeated rows are shared) × `time` positions,
 * attention over all T² pairs of a row, and the output head over the `outputs` loss tokens only
 * (and its `columns`, the vocabulary by default). The embedding is a row lookup: no FLOPs.
 */
export function stepFlops(
  config: PolicyConfig,
  shape: { rows: number; time: number; outputs: number; columns?: number },
): number {
  const { dModel: d, ffnMult, layers } = config;
  const { rows, time, outputs } = shape;
  const v = shape.columns ?? config.vocabSize;
  const tokens = rows * time;
  const perLayer = 2 * tokens * (d * 3 * d + d * d + 2 * d * d * ffnMult) + 2 * 2 * rows * time * time * d;
  const forward = layers * perLayer + 2 * outputs * d * v;
  return 3 * forward;
}

/**
 * Token counts of a batch (after each row's first token, which is never predicted): loss tokens of
 * any component, and each component's own — rl: mask set and rl weight ≠ 0 (absent stream = 1 on
 * the mask); ce and ref_kl: weight ≠ 0 (prime-rl `src/prime_rl/trainer/rl/train.py:310-317`).
 */
function lossTokenCounts(rows: readonly TrainRow[]): { tokens: number; rl: number; ce: number; refKl: number } {
  const counts = { tokens: 0, rl: 0, ce: 0, refKl: 0 };
  for (const row of rows) {
    const rl = row.rlWeights ?? null;
    const ce = row.ceWeights ?? null;
    const refKl = row.refKlWeights ?? null;
    for (let j = 1; j < row.tokenIds.length; j++) {
      const inRl = rlWeightAt(row, rl, j) !== 0;
      const inCe = ce !== null && ce[j] !== 0;
      const inRef = refKl !== null && refKl[j] !== 0;
      if (inRl) counts.rl++;
      if (inCe) counts.ce++;
      if (inRef) counts.refKl++;
      if (inRl || inCe || inRef) counts.tokens++;
    }
  }
  return counts;
}
