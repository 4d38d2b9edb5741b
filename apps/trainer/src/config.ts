import { AlgorithmConfigSchema } from '@troupe/prime-rl';
import { TrainerConfigSchema } from '@troupe/prime-rl';
import { z } from 'zod';

/** A training run: env, policy shape, rollouts per step, algorithm, trainer, evaluation. */
export const TrainRunConfigSchema = z
  .object({
    env: z.literal('kuhn-poker').default('kuhn-poker'),
    seed: z.number().int().default(0),
    maxSteps: z.number().int().positive().default(150),
    /** Episodes per task (a group: same deal, played groupSize times). */
    groupSize: z.number().int().positive().default(8),
    /** Groups per training step (hands per step = groupSize × groupsPerStep). */
    groupsPerStep: z.number().int().positive().default(32),
    /** Drop rollouts whose policy is more than this many steps behind the trainer. */
    maxOffPolicySteps: z.number().int().nonnegative().default(8),
    /** Train in a worker thread (overlaps rollouts and training); off in tests. */
    workerThread: z.boolean().default(true),
    algorithm: AlgorithmConfigSchema.default({ type: 'rae', decay: 0.95 } as never),
    policy: z
      .object({
        dModel: z.number().int().positive().default(32),
        layers: z.number().int().positive().default(2),
        heads: z.number().int().positive().default(2),
        ffnMult: z.number().int().positive().default(2),
      })
      .strict()
      .prefault({}),
    trainer: TrainerConfigSchema.prefault({ lr: 3e-3, refKlTau: 0.05 }),
    sampling: z
      .object({ temperature: z.number().positive().default(1), maxTokens: z.number().int().positive().default(2) })
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
