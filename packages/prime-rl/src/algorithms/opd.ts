import type { Episode } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import { tokenChains } from '../samples/trace-to-samples.ts';
import type { Algorithm, AlgorithmContext, FrozenModelReference, LogprobScorer } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { assignReferenceLogprobs } from './reference-logprobs.ts';
import { iterTrainableTraces } from './trainable-traces.ts';

/**
 * opd's teacher: `{ checkpoint }`, a run checkpoint of an embedded policy, or `{ baseUrl, model,
 * apiKeyVar? }`, a served model that prefill-scores token ids as prime-rl's teacher is (a frozen
 * hosted model, `name` + `base_url`, `packages/prime-rl-configs/src/prime_rl/configs/algorithm.py:46-66`
 * at 559b447; scored through vLLM's `/inference/v1/generate` with `prompt_logprobs`,
 * `src/prime_rl/utils/client.py:479-514`). Either must share the student's tokenizer. Each field
 * is checked by name; a table mixing the two forms, or an endpoint without `model`, is refused.
 */
export const TeacherSchema = z
  .strictObject({
    /** A run's `checkpoint/` directory, trained with the same tokenizer as the student's. */
    checkpoint: z.string().min(1).optional(),
    /** The server's OpenAI-compatible base URL (`http://host:8000/v1`); the scoring route is at its root. */
    baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    /** The served model's name, sent as the `model` field of every request. */
    model: z.string().min(1).optional(),
    /** The environment variable holding the server's API key (read when the run starts, never recorded). */
    apiKeyVar: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    /** Whole-call timeout of one scoring request in milliseconds (default 60000). */
    timeoutMs: z.number().int().positive().optional(),
  })
  .superRefine((teacher, ctx) => {
    const endpoint = (['baseUrl', 'model', 'apiKeyVar', 'timeoutMs'] as const).filter((key) => teacher[key] !== undefined);
    if (teacher.checkpoint !== undefined) {
      for (const key of endpoint)
        ctx.addIssue({ code: 'custom', path: [key], message: 'a checkpoint teacher takes no endpoint fields' });
      return;
    }
    if (teacher.baseUrl === undefined)
      ctx.addIssue({
        code: 'custom',
        path: endpoint.length ? ['baseUrl'] : [],
        message: endpoint.length
          ? 'required for an endpoint teacher'
          : 'a teacher is { checkpoint = "..." } or { base_url = "...", model = "...", api_key_var = "..." }',
      });
    if (teacher.baseUrl !== undefined && teacher.model === undefined)
      ctx.addIssue({ code: 'custom', path: ['model'], message: 'required for an endpoint teacher' });
  })
  .transform(
    (teacher): FrozenModelReference =>
      teacher.checkpoint !== undefined
        ? { checkpoint: teacher.checkpoint }
        : {
            baseUrl: teacher.baseUrl as string,
            model: teacher.model as string,
            ...(teacher.apiKeyVar !== undefined ? { apiKeyVar: teacher.apiKeyVar } : {}),
            ...(teacher.timeoutMs !== undefined ? { timeoutMs: teacher.timeoutMs } : {}),
          },
  );

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
  readonly teacher: FrozenModelReference;
  private scorer: LogprobScorer | null = null;

  constructor(config: OpdConfig) {
    this.teacher = OpdConfigSchema.parse(config).teacher;
  }

  /** Connects the teacher (prime-rl `OPDAlgorithm.setup`, `algo/opd.py:34-35`). */
  async setup(context: AlgorithmContext): Promise<void> {
    this.scorer = await context.connect(this.teacher);
  }

  /**
   * Scores every token branch of the episode's trainable traces under the teacher
   * (`algo/opd.py:37-45`); when the teacher fails, the episode's traces record the error (stage
   * `teacher`) and do not train.
   */
  async scoreEpisode(episode: Episode): Promise<void> {
    const scorer = this.scorer;
    if (!scorer) throw new ConfigError('opd: the teacher is not connected (call setup before rollouts)', { path: 'teacher' });
    const traces = [...iterTrainableTraces(episode)];
    const branches = traces.flatMap((trace) => tokenChains(trace));
    let scores: number[][];
    try {
      scores = await Promise.all(branches.map((nodes) => scorer.score(nodes.flatMap((node) => node.tokenIds ?? []))));
    } catch (error) {
      // A teacher that cannot score this episode (a refusal, a server down past its retries) fails
      // the episode alone: its traces record the error and do not train. A config error (a
      // tokenizer that differs) is the run's and ends it.
      if (error instanceof ConfigError) throw error;
      for (const trace of traces) trace.recordError(error, 'teacher');
      return;
    }
    branches.forEach((nodes, i) => {
      assignReferenceLogprobs({ nodes, logprobs: scores[i] as number[] });
    });
  }

  scoreGroup(episodes: readonly Episode[]): void {
    // Samples need an advantage on every sampled token; ref_kl reads none (prime-rl ships `None`).
    for (const trace of iterTrainableTraces(episodes)) assignAdvantages(trace, 0);
  }
}
