import { AlgorithmConfigSchema, TrainerConfigSchema } from '@troupe/prime-rl';
import { z } from 'zod';

/** A training run: env, policy shape, rollouts per step, algorithm, trainer, evaluation. */
export const TrainRunConfigSchema = z
  .object({
    env: z.literal('kuhn-poker').default('kuhn-poker'),
    /** Wording of the env's messages: `compact` (≈10 tokens each; the policy pays for every token) or `rules`. */
    prompts: z.enum(['compact', 'rules']).default('compact'),
    /**
     * The env's re-asks after an illegal reply before the seat forfeits (default 1). With 0 an
     * illegal reply forfeits at once; measured here, self-play then found "player 0 bets, player 1
     * answers with an illegal token" (forfeits → 0.99) before it learned legality at player 1's seat.
     */
    invalidRetries: z.number().int().min(0).default(1),
    seed: z.number().int().default(0),
    maxSteps: z.number().int().positive().default(300),
    /** Episodes per task (a group: same deal, played groupSize times). */
    groupSize: z.number().int().positive().default(8),
    /** Groups per training step (hands per step = groupSize × groupsPerStep). */
    groupsPerStep: z.number().int().positive().default(64),
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
         * Initial weight std. 0.02 (GPT's) works here; 1/√dModel left the policy blind to its card
         * (measured: 30 steps of card-dependent advantages moved nothing).
         */
        initStd: z.number().positive().default(0.02),
      })
      .strict()
      .prefault({}),
    trainer: TrainerConfigSchema.prefault({ lr: 1e-2, refKlTau: 0.05 }),
    /** Learning-rate schedule over the run: cosine from `trainer.lr` down to `trainer.lr × lrFinalFraction` at `maxSteps`. */
    lrFinalFraction: z.number().min(0).max(1).default(0.1),
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
