import type { Episode } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { iterTrainableTraces } from './trainable-traces.ts';

/** Where an `sft` source's replies come from. */
export const SftRepliesSchema = z.union([
  z.strictObject({
    /** A field of each task's data holding its reference reply (e.g. `answer`). */
    field: z.string().min(1),
  }),
  z.strictObject({
    /** An exported `traces.jsonl` (one Episode per line): each trace's last reply, looked up by the user message before it. */
    traces: z.string().min(1),
    /** Only traces of this role (default: every role). */
    role: z.string().min(1).optional(),
  }),
]);
/** Where an `sft` source's replies come from; see {@link SftRepliesSchema}. */
export type SftReplies = z.infer<typeof SftRepliesSchema>;

/** Config of {@link Sft}. */
export const SftConfigSchema = z.strictObject({
  type: z.literal('sft'),
  /** The given completions the trainable roles reply with (default: each task's `answer` field). */
  replies: SftRepliesSchema.default({ field: 'answer' }),
});
/** The config `new Sft(config)` accepts; see {@link SftConfigSchema}. */
export type SftConfig = z.input<typeof SftConfigSchema>;

/**
 * Supervised fine-tuning on given completions (prime-rl's `sft`,
 * `src/prime_rl/orchestrator/algo/sft.py` at 559b447: CE on the tokens of a frozen sampling
 * source). The source's trainable roles do not sample: the run serves them the given replies
 * (`replies`: a task field, or an exported `traces.jsonl`), tokenised by the policy's tokenizer,
 * and the policy trains with cross-entropy on those tokens (`actionLoss` `ce`; no credit — every
 * advantage is 0 and the rl weights are 0). A run may mix an `sft` source with rl sources: one
 * policy trains on both, each component normalised by its own tokens.
 */
export class Sft implements Algorithm {
  readonly type = 'sft';
  readonly actionLoss = 'ce';
  /** No group baseline: an off-policy episode is dropped on its own. */
  readonly staleEpisodes = 'keep';
  readonly replies: SftReplies;

  constructor(config: SftConfig = { type: 'sft' }) {
    this.replies = SftConfigSchema.parse(config).replies;
  }

  scoreGroup(episodes: readonly Episode[]): void {
    // Samples need an advantage on every sampled token; ce reads none (prime-rl ships `None`).
    for (const trace of iterTrainableTraces(episodes)) assignAdvantages(trace, 0);
  }
}
