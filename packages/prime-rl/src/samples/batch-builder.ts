import type { Episode } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import type { ActionLoss } from '../algorithms/algorithm.ts';
import { configIssues, formatConfigIssues } from '../algorithms/format-issues.ts';
import { attachReferenceLogprobs, stampLossRouting } from './loss-routing.ts';
import { appendTraceSamples, type TraceSampleTally } from './trace-to-samples.ts';
import type { TrainingSample } from './training-sample.ts';
import { filterZeroAdvantages } from './zero-advantage-filter.ts';

const NO_BATCHES: readonly TrainingBatch[] = Object.freeze([]);

/** Config of {@link BatchBuilder}: exactly one of `batchSize` (traces) or `tokenBatchSize` (tokens). */
export const BatchBuilderConfigSchema = z
  .strictObject({
    /** Cut a batch when it holds this many trainable traces (prime-rl `batch_size`). */
    batchSize: z.number().int().positive().optional(),
    /** Cut a batch when it holds at least this many tokens (prime-rl `token_batch_size`). */
    tokenBatchSize: z.number().int().positive().optional(),
    /** Clear mask bits with advantage 0 and drop samples left with none, after the cut. Default true. */
    filterZeroAdvantages: z.boolean().default(true),
  })
  .refine((config) => (config.batchSize === undefined) !== (config.tokenBatchSize === undefined), {
    message: 'give exactly one of batchSize (traces) or tokenBatchSize (tokens)',
    path: ['batchSize'],
  });
/**
 * What `new BatchBuilder(config)` accepts: exactly one of `batchSize` (traces) or `tokenBatchSize`
 * (tokens) as the cut, and whether to filter zero advantages (default true);
 * {@link BatchBuilderConfigSchema} throws naming the field otherwise.
 */
export type BatchBuilderConfig = z.input<typeof BatchBuilderConfigSchema>;

/** One cut batch of training samples. */
export interface TrainingBatch {
  samples: TrainingSample[];
  /** Trainable traces counted into the batch (including ones whose samples the filter dropped). */
  numTraces: number;
  /** Tokens counted into the batch before filtering. */
  numTokens: number;
  /** Samples dropped by the zero-advantage filter. */
  droppedSamples: number;
  /** Mask bits cleared by the zero-advantage filter. */
  maskedTokens: number;
}

/**
 * Accumulates the samples of scored groups and cuts batches by trace count or token count. The
 * samples of one trace never split across batches. A batch is cut as soon as it reaches
 * `batchSize` traces; with `tokenBatchSize`, a trace that would overflow a non-empty batch starts
 * the next one, so a batch exceeds the budget only when a single trace does.
 */
export class BatchBuilder {
  readonly config: z.output<typeof BatchBuilderConfigSchema>;
  private samples: TrainingSample[] = [];
  private traces = 0;
  private tokens = 0;
  /** Filter counts of the open batch's samples, filtered as they were added (by `addEpisodes`). */
  private droppedSamples = 0;
  private maskedTokens = 0;
  /** True when `addSamples` put samples into the open batch: they are filtered at the cut. */
  private unfiltered = false;
  private readonly tally: TraceSampleTally = { samples: 0, tokens: 0, droppedSamples: 0, maskedTokens: 0 };

  constructor(config: BatchBuilderConfig) {
    const parsed = BatchBuilderConfigSchema.safeParse(config);
    if (!parsed.success) {
      const issues = configIssues(parsed.error, 'batch');
      throw new ConfigError(formatConfigIssues(issues), { issues });
    }
    this.config = parsed.data;
  }

  /** Traces waiting in the open batch. */
  get pendingTraces(): number {
    return this.traces;
  }

  /**
   * Adds the samples of a scored group (or any episodes); returns the batches it completed. With
   * the zero-advantage filter on, each trace's samples are filtered as they are built (a dropped
   * sample is never built): the batches are the ones filtering at the cut gives. `actionLoss` is
   * the loss component of the group's algorithm (default `rl`): with `ce` or `ref_kl` the samples
   * are routed there (`stampLossRouting`), carry any teacher logprobs of their nodes, and skip the
   * zero-advantage filter, which only prunes rl tokens (prime-rl `_prune_zero_advantages`,
   * `src/prime_rl/orchestrator/train_sink.py:36-61` at 559b447).
   */
  addEpisodes(episodes: readonly Episode[], options: { actionLoss?: ActionLoss } = {}): readonly TrainingBatch[] {
    let out: TrainingBatch[] | null = null;
    const { batchSize, tokenBatchSize } = this.config;
    const actionLoss = options.actionLoss ?? 'rl';
    const filter = this.config.filterZeroAdvantages && actionLoss === 'rl';
    const tally = this.tally;
    for (let e = 0; e < episodes.length; e++) {
      const episode = episodes[e]!;
      const traces = episode.traces;
      for (let t = 0; t < traces.length; t++) {
        const start = this.samples.length;
        appendTraceSamples(traces[t]!, episode.env.id, episode.id, this.samples, tally, filter);
        if (tally.samples === 0) continue;
        if (actionLoss !== 'rl') this.route(traces[t]!, start, actionLoss);
        const tokens = tally.tokens;
        if (tokenBatchSize !== undefined && this.traces > 0 && this.tokens + tokens > tokenBatchSize) {
          const moved = this.samples.splice(start, this.samples.length - start);
          (out ??= []).push(this.cut());
          for (const sample of moved) this.samples.push(sample);
        }
        this.traces++;
        this.tokens += tokens;
        this.droppedSamples += tally.droppedSamples;
        this.maskedTokens += tally.maskedTokens;
        if (batchSize !== undefined ? this.traces >= batchSize : this.tokens >= tokenBatchSize!) (out ??= []).push(this.cut());
      }
    }
    return out ?? NO_BATCHES;
  }

  /** Routes the samples of `trace` (from index `start` of the open batch) into the `actionLoss` component. */
  private route(trace: Episode['traces'][number], start: number, actionLoss: ActionLoss): void {
    const added = this.samples.slice(start);
    for (const sample of added) stampLossRouting(sample, actionLoss);
    if (actionLoss === 'ref_kl') attachReferenceLogprobs(trace, added);
  }

  /** Adds samples (consecutive samples with the same `traceId` count as one trace). */
  addSamples(samples: readonly TrainingSample[]): TrainingBatch[] {
    const out: TrainingBatch[] = [];
    const { batchSize, tokenBatchSize } = this.config;
    let i = 0;
    while (i < samples.length) {
      const traceId = samples[i]!.traceId;
      let end = i;
      let tokens = 0;
      while (end < samples.length && samples[end]!.traceId === traceId) tokens += samples[end++]!.tokenIds.length;
      if (tokenBatchSize !== undefined && this.traces > 0 && this.tokens + tokens > tokenBatchSize) out.push(this.cut());
      for (let k = i; k < end; k++) this.samples.push(samples[k]!);
      this.unfiltered = true;
      this.traces++;
      this.tokens += tokens;
      if (batchSize !== undefined ? this.traces >= batchSize : this.tokens >= tokenBatchSize!) out.push(this.cut());
      i = end;
    }
    return out;
  }

  /** Cuts whatever is pending (e.g. at the end of a run); null when nothing is. */
  flush(): TrainingBatch | null {
    return this.traces > 0 ? this.cut() : null;
  }

  private cut(): TrainingBatch {
    const batch: TrainingBatch = {
      samples: this.samples,
      numTraces: this.traces,
      numTokens: this.tokens,
      droppedSamples: this.droppedSamples,
      maskedTokens: this.maskedTokens,
    };
    if (this.config.filterZeroAdvantages && this.unfiltered) {
      // Filtering again the samples addEpisodes filtered changes and counts nothing.
      const filtered = filterZeroAdvantages(this.samples);
      batch.samples = filtered.samples;
      batch.droppedSamples += filtered.droppedSamples;
      batch.maskedTokens += filtered.maskedTokens;
    }
    this.samples = [];
    this.traces = 0;
    this.tokens = 0;
    this.droppedSamples = 0;
    this.maskedTokens = 0;
    this.unfiltered = false;
    return batch;
  }
}
