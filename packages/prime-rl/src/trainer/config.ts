import { z } from 'zod';

/** Trainer settings: the prime-rl default loss, a reference-KL regulariser, AdamW. */
export const TrainerConfigSchema = z
  .object({
    /** AdamW learning rate. */
    lr: z.number().positive().default(3e-3),
    /** AdamW's decay rates of the first and second moment estimates, each in [0, 1). */
    betas: z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]).default([0.9, 0.999]),
    /** AdamW's denominator epsilon. */
    eps: z.number().positive().default(1e-8),
    /** Decoupled weight decay on weight matrices (not biases, gains or embeddings). */
    weightDecay: z.number().min(0).default(0.01),
    /** Global gradient-norm clip. */
    maxGradNorm: z.number().positive().default(1.0),
    /** DPPO trust region: tokens with A>0 and π−μ > high, or A≤0 and π−μ < −low, are masked. */
    dppoMaskLow: z.number().positive().default(0.2),
    /** Upper bound of the DPPO trust region (see `dppoMaskLow`). */
    dppoMaskHigh: z.number().positive().default(0.2),
    /** Scale of the advantage term of the loss. */
    advTau: z.number().default(1.0),
    /** Weight of log²(π/μ) (the trainer–inference mismatch penalty). */
    klTau: z.number().min(0).default(1e-3),
    /**
     * Weight of KL(π ‖ ρ) per sampled token toward a fixed reference ρ, uniform over the model's
     * output tokens (magnetic mirror descent; makes the last iterate converge in self-play).
     * 0 disables it.
     */
    refKlTau: z.number().min(0).default(0),
    /**
     * Rows of a batch are cut into buckets by length, each padded to its own longest row; a bucket
     * smaller than this joins the next longer one.
     */
    minBucketRows: z.number().int().positive().default(64),
    /** Sampling temperature the inference logprobs were computed at. */
    temperature: z.number().positive().default(1),
  })
  .strict();
/** Trainer settings as parsed by {@link TrainerConfigSchema}, every default applied. */
export type TrainerConfig = z.infer<typeof TrainerConfigSchema>;
/** Trainer settings as a caller gives them (every field optional); see {@link TrainerConfigSchema}. */
export type TrainerConfigInput = z.input<typeof TrainerConfigSchema>;

/** Per-step overrides of the configured trainer values (the loop's schedules). */
export interface StepOptions {
  lr?: number;
  refKlTau?: number;
  /** Adam's β1 for this step (its first-moment decay). */
  beta1?: number;
}

/** One training sequence: per-token ids, loss mask, inference logprobs and advantages (aligned with `tokenIds`). */
export interface TrainRow {
  tokenIds: readonly number[];
  /** True on sampled tokens (the ones the loss sees). */
  mask: readonly boolean[];
  /** Inference logprob of each token (0 where mask is false). */
  logprobs: readonly number[];
  /** Advantage of each token (0 where mask is false). */
  advantages: readonly number[];
  /**
   * prime-rl's loss-component weight streams, per token (aligned with `tokenIds`): a token enters
   * a component where its weight is not 0, and its loss there is scaled by the weight. Absent
   * `rlWeights` = 1 on the mask; absent `ceWeights` / `refKlWeights` = no such component.
   */
  rlWeights?: readonly number[] | null;
  /** Cross-entropy (NLL) weight per token; read on any token, masked or not. */
  ceWeights?: readonly number[] | null;
  /** Reverse-KL-to-teacher weight per token (on-policy distillation); needs `refLogprobs`. */
  refKlWeights?: readonly number[] | null;
  /** The teacher's logprob of each token (0 where it was not scored), read where `refKlWeights` ≠ 0. */
  refLogprobs?: readonly number[] | null;
}

/** Per-step training metrics. */
export interface TrainMetrics {
  /** The step's loss: rl + ce + teacher components (each over its own token count) + refKlTau · refKl. */
  loss: number;
  /** The rl component: Σ over rl tokens of weight · (−[¬masked]·advTau·A·r + klTau·log²r), over `rlTokens`. */
  rlLoss: number;
  /** KL(π ‖ uniform over the output tokens) per rl token (the `refKlTau` regulariser). */
  refKl: number;
  /** Mean entropy of π over every loss token. */
  entropy: number;
  /** Mean of r − 1 − log r over rl tokens (k3 estimate of KL(μ ‖ π)). */
  mismatchKl: number;
  /** Fraction of rl tokens masked by the trust region. */
  maskedFraction: number;
  /** The ce component: Σ weight · (−log π) over ce tokens, over `ceTokens` (the mean NLL at weight 1). */
  ceLoss: number;
  /** The ref_kl (teacher) component: Σ weight · (−[¬masked]·(log π_teacher − log π)·r + 1e-3·log²r), over `refKlTokens`. */
  teacherLoss: number;
  /** Mean of log π − log π_teacher over ref_kl tokens: the student's reverse KL to its teacher on its own samples. */
  teacherKl: number;
  gradNorm: number;
  /** Loss tokens: tokens in at least one component. */
  tokens: number;
  /** Tokens of the rl component (mask set, rl weight ≠ 0): its normaliser. */
  rlTokens: number;
  /** Tokens of the ce component (ce weight ≠ 0): its normaliser. */
  ceTokens: number;
  /** Tokens of the ref_kl component (ref_kl weight ≠ 0): its normaliser. */
  refKlTokens: number;
  sequences: number;
  /** Padded length of the longest bucket. */
  paddedLength: number;
  /** Tokens the forward passes ran over (rows × padded length, summed over buckets). */
  paddedTokens: number;
  /** Length buckets (one forward and backward pass each). */
  buckets: number;
  /** Estimated FLOPs of the step (forward + backward, matmuls only). */
  flops: number;
  ms: number;
}
