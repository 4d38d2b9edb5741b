import { AlgorithmConfigSchema, TrainerConfigSchema } from '@troupe/prime-rl';
import { z } from 'zod';

/** The trainer settings of the Kuhn default (a config's `trainer` object is merged over them). */
export const TRAINER_DEFAULTS = { lr: 3e-3, refKlTau: 0.15, betas: [0, 0.999] as [number, number] };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A training run: env, policy shape, rollouts per step, algorithm, trainer, evaluation. */
export const TrainRunConfigSchema = z
  .object({
    env: z.literal('kuhn-poker').default('kuhn-poker'),
    /**
     * Wording of the env's messages: `pass-bet` (compact, ≈10 tokens each, the two actions named
     * [pass] / [bet] at every decision, so the policy's head has two tokens, both legal), `compact`
     * (the four action names, two illegal at each decision) or `rules`.
     */
    prompts: z.enum(['pass-bet', 'compact', 'rules']).default('pass-bet'),
    /**
     * The env's re-asks after an illegal reply before the seat forfeits (default 1). With 0 an
     * illegal reply forfeits at once; measured here, self-play then found "player 0 bets, player 1
     * answers with an illegal token" (forfeits → 0.99) before it learned legality at player 1's seat.
     */
    invalidRetries: z.number().int().min(0).default(1),
    seed: z.number().int().default(0),
    maxSteps: z.number().int().positive().default(700),
    /**
     * How tasks deal: `stratified` (default) cycles through the six deals, so a step's groups hold
     * each deal equally often (measured here: with random deals a step's batch is off by ±3 groups
     * per deal, and that deal luck kicked a converging policy back to NashConv 0.4); `seeded` deals
     * from the task's seed.
     */
    deals: z.enum(['stratified', 'seeded']).default('stratified'),
    /** Episodes per task (a group: same deal, played groupSize times). */
    groupSize: z.number().int().positive().default(8),
    /** Groups per training step (hands per step = groupSize × groupsPerStep). */
    groupsPerStep: z.number().int().positive().default(72),
    /** Drop rollouts whose policy is more than this many steps behind the trainer. */
    maxOffPolicySteps: z.number().int().nonnegative().default(8),
    /** Train in a worker thread (overlaps rollouts and training); off in tests. */
    workerThread: z.boolean().default(true),
    algorithm: AlgorithmConfigSchema.default({ type: 'rae', decay: 0.95 } as never),
    policy: z
      .object({
        dModel: z.number().int().positive().default(32),
        layers: z.number().int().positive().default(1),
        heads: z.number().int().positive().default(4),
        ffnMult: z.number().int().positive().default(2),
        /**
         * Initial weight std. 0.1 (measured here, fitting the 12-set equilibrium table by supervised
         * Adam steps: ≈70 steps at 0.1, ≈275 at GPT's 0.02, slower again at 0.3).
         */
        initStd: z.number().positive().default(0.1),
      })
      .strict()
      .prefault({}),
    /**
     * AdamW without momentum (β1 = 0): momentum carries a player past the equilibrium and self-play
     * cycles (measured here: with β1 0.9 the last iterate swung between NashConv 0.3 and 1.4 every
     * ≈40 steps; negative or no momentum is the known cure in games, Gidel et al. 2019).
     * refKlTau 0.15: the fixed point is the quantal-response equilibrium of temperature 0.15,
     * NashConv 0.062 (computed exactly), far enough from pure strategies to stay stable.
     * A partial `trainer` object is merged over these (setting only `lr` keeps β1 = 0).
     */
    trainer: z
      .preprocess((value) => (isPlainObject(value) ? { ...TRAINER_DEFAULTS, ...value } : value), TrainerConfigSchema)
      .prefault({}),
    /**
     * Learning-rate schedule: cosine from `trainer.lr` down to `trainer.lr × lrFinalFraction` over
     * the first `lrDecayFraction` of the steps, then constant.
     */
    lrFinalFraction: z.number().min(0).max(1).default(0.033),
    lrDecayFraction: z.number().gt(0).max(1).default(0.6),
    /**
     * Adam's β1 once the learning rate has reached its floor (null: `trainer.betas[0]` throughout).
     * At the floor the policy moves little in ten steps, so momentum there averages gradient noise
     * (≈ a 10× batch) without the overshoot that makes it cycle at a high learning rate.
     */
    momentumAtFloor: z.number().min(0).lt(1).nullable().default(null),
    /**
     * Reference-KL schedule: `trainer.refKlTau` starts at `refKlTauStart` and decays (cosine) to
     * `trainer.refKlTau` over the first `refKlDecayFraction` of the steps. A strong pull to uniform
     * early keeps the policy exploring while it learns to read its card; without it self-play
     * collapses to the card-blind "always bet / call" (measured here).
     */
    refKlTauStart: z.number().min(0).nullable().default(0.5),
    refKlDecayFraction: z.number().gt(0).max(1).default(0.2),
    sampling: z
      .object({ temperature: z.number().positive().default(1), maxTokens: z.number().int().positive().default(1) })
      .strict()
      .prefault({}),
    inference: z
      .object({ maxBatch: z.number().int().positive().default(512), maxWaitMs: z.number().min(0).default(0) })
      .strict()
      .prefault({}),
    /** Evaluate the policy table every N steps (and at the last step). */
    evalEvery: z.number().int().positive().default(1),
    /** Checkpoint every N steps (and at the last step). */
    checkpointEvery: z.number().int().positive().default(25),
  })
  .strict();
export type TrainRunConfig = z.infer<typeof TrainRunConfigSchema>;
export type TrainRunConfigInput = z.input<typeof TrainRunConfigSchema>;
