import type { Episode } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import { tokenChains } from '../samples/trace-to-samples.ts';
import type { Algorithm, AlgorithmContext, LogprobScorer } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { assignReferenceLogprobs } from './reference-logprobs.ts';
import { iterTrainableTraces } from './trainable-traces.ts';

/**
 * opd's teacher: a run checkpoint of an embedded policy. (prime-rl's other teacher, a vLLM server
 * prefill-scoring token ids through its `/inference/v1/generate` extension, is not wired here.)
 */
export const TeacherSchema = z.strictObject({
  /** A run's `checkpoint/` directory, trained with the same tokenizer as the student's. */
  checkpoint: z.string().min(1),
});

/** Config of {@link Opd}. */
export const OpdConfigSchema = z.strictObject({
  type: z.literal('opd'),
  /** The frozen teacher whose per-token logprobs supervise the student's own samples. */
  teacher: TeacherSchema,
});
/** The config `new Opd(config)` accepts; see {@link OpdConfigSchema}. */
export type OpdConfig = z.input<typeof OpdConfigSchema>;

/**
 * On-policy distillation (prime-rl's `opd`, `src/prime_rl/orchestrator/algo/opd.py` at 559b447):
 * the policy samples its own rollouts; as each episode arrives, every token branch of its
 * trainable traces is prefill-scored under the frozen teacher, and the trainer's `ref_kl`
 * component pulls each sampled token by the teacher's log-ratio, sg(log π_teacher − log π)·r
 * (`actionLoss` `ref_kl`: rl weights 0, no credit). `groupSize` only fans out sampling.
 */
export class Opd implements Algorithm {
  readonly type = 'opd';
  readonly actionLoss = 'ref_kl';
  /** No group baseline: an off-policy episode is dropped on its own. */
  readonly staleEpisodes = 'keep';
  readonly teacher: z.infer<typeof TeacherSchema>;
  private scorer: LogprobScorer | null = null;

  constructor(config: OpdConfig) {
    this.teacher = OpdConfigSchema.parse(config).teacher;
  }

  /** Connects the teacher (prime-rl `OPDAlgorithm.setup`, `algo/opd.py:34-35`). */
  async setup(context: AlgorithmContext): Promise<void> {
    this.scorer = await context.connect(this.teacher);
  }

  /** Scores every token branch of the episode's trainable traces under the teacher (`algo/opd.py:37-45`). */
  async scoreEpisode(episode: Episode): Promise<void> {
    const scorer = this.scorer;
    if (!scorer) throw new ConfigError('opd: the teacher is not connected (call setup before rollouts)', { path: 'teacher' });
    const branches = [...iterTrainableTraces(episode)].flatMap((trace) => tokenChains(trace));
    const scores = await Promise.all(branches.map((nodes) => scorer.score(nodes.flatMap((node) => node.tokenIds ?? []))));
    branches.forEach((nodes, i) => {
      assignReferenceLogprobs({ nodes, logprobs: scores[i] as number[] });
    });
  }

  scoreGroup(episodes: readonly Episode[]): void {
    // Samples need an advantage on every sampled token; ref_kl reads none (prime-rl ships `None`).
    for (const trace of iterTrainableTraces(episodes)) assignAdvantages(trace, 0);
  }
}
