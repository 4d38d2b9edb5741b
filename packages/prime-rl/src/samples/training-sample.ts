import { z } from 'zod';

/**
 * One training sequence: one branch of one trainable trace, per token. What the orchestrator hands
 * its trainer; on prime-rl's wire it becomes a `WireSample` (`toWireSample` in `/transport`).
 */
export const TrainingSampleSchema = z
  .strictObject({
    /** Token ids of the branch: prompts and completions of its chain of turns, in order. */
    tokenIds: z.array(z.number().int().nonnegative()),
    /** True on tokens that train: sampled by the model in this branch (and, after the zero-advantage filter, with A ≠ 0). */
    mask: z.array(z.boolean()),
    /** Inference (sampling) logprob per token; 0 on tokens the model did not sample. */
    logprobs: z.array(z.number()),
    /** Advantage per token; 0 where the mask is false. */
    advantages: z.array(z.number()),
    /** Env id of the episode. */
    env: z.string(),
    /** Role (agent name) of the trace. */
    role: z.string(),
    /** Id of the trace the branch comes from. */
    traceId: z.string(),
    /** Id of the episode the trace belongs to. */
    episodeId: z.string(),
    /** Index of the branch within its trace (0 = first). */
    branch: z.number().int().nonnegative(),
    /**
     * prime-rl's loss routing, per token (absent on the rl algorithms' samples): the rl weight
     * (absent = 1 on the mask); set to 0 everywhere when the algorithm trains with ce or ref_kl.
     */
    rlWeights: z.array(z.number()).optional(),
    /** Cross-entropy weight per token (`sft`: 1 on the given completion's tokens). */
    ceWeights: z.array(z.number()).optional(),
    /** Reverse-KL-to-teacher weight per token (`opd`: 1 on the sampled tokens). */
    refKlWeights: z.array(z.number()).optional(),
    /** The teacher's logprob per token (`opd`; 0 where it was not scored). */
    refLogprobs: z.array(z.number()).optional(),
  })
  .superRefine((sample, context) => {
    const length = sample.tokenIds.length;
    for (const field of ['mask', 'logprobs', 'advantages', 'rlWeights', 'ceWeights', 'refKlWeights', 'refLogprobs'] as const) {
      const values = sample[field];
      if (values !== undefined && values.length !== length) {
        context.addIssue({
          code: 'custom',
          path: [field],
          message: `has ${values.length} entries but tokenIds has ${length}`,
        });
      }
    }
  });
/**
 * One training sequence (one branch of one trainable trace) with per-token ids, mask, logprobs and
 * advantages of equal length; see {@link TrainingSampleSchema}.
 */
export type TrainingSample = z.infer<typeof TrainingSampleSchema>;

/** Number of tokens with a mask bit set. */
export function trainedTokenCount(sample: TrainingSample): number {
  let count = 0;
  const mask = sample.mask;
  for (let i = 0; i < mask.length; i++) if (mask[i]) count++;
  return count;
}
