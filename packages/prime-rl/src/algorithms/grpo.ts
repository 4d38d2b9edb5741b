import type { Episode, Trace } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { traceReward, trainableTraces } from './trainable-traces.ts';

/** Linear length penalty of GRPO (prime-rl `length_penalty = {type = "linear", …}`). */
export const LinearLengthPenaltySchema = z.strictObject({
  type: z.literal('linear'),
  /** Weight of the trace's sampled (output) token count, relative to the group's largest. */
  numOutputTokensWeight: z.number().nonnegative().default(0.25),
  /** Weight of the trace's prompt (input, unsampled) token count, relative to the group's largest. */
  numInputTokensWeight: z.number().nonnegative().default(0.1),
  /** Weight of the trace's number of model turns, relative to the group's largest. */
  numTurnsWeight: z.number().nonnegative().default(0.1),
});
/**
 * The length penalty of {@link GrpoConfig} as parsed (defaults applied): per-trace weights of its
 * completion tokens, input tokens and turns, each relative to the group's largest, subtracted from
 * the reward before centring.
 */
export type LinearLengthPenalty = z.infer<typeof LinearLengthPenaltySchema>;

/** Config of {@link Grpo}. */
export const GrpoConfigSchema = z.strictObject({
  type: z.literal('grpo'),
  /** Optional penalty subtracted from rewards before centring. Off when absent. */
  lengthPenalty: LinearLengthPenaltySchema.optional(),
});
/**
 * The config `new Grpo(config)` accepts (`type: 'grpo'`, optional `lengthPenalty`); parsed with
 * {@link GrpoConfigSchema}, which throws naming a bad field.
 */
export type GrpoConfig = z.input<typeof GrpoConfigSchema>;

/**
 * GRPO without std normalisation (DR-GRPO): over ALL trainable traces of the group,
 * `A_i = r_i − mean(r)`, broadcast to every sampled token. A singleton group and a group of equal
 * rewards give exactly 0. On a multi-role env every trainable seat is pooled into one mean.
 *
 * With a linear length penalty: `pen_i = mean(r)·(w_o·out_i/max(out) + w_in·in_i/max(in) +
 * w_t·turns_i/max(turns))` (each max clamped ≥ 1), `r'_i = r_i − pen_i`, `A_i = r'_i − mean(r')`.
 * `out` counts sampled tokens, `in` unsampled (prompt) tokens, `turns` sampled nodes.
 */
export class Grpo implements Algorithm {
  readonly type = 'grpo';
  /** A stale episode is dropped and the group rescored without it: its mean is the survivors'. */
  readonly staleEpisodes = 'rescore';
  readonly config: z.output<typeof GrpoConfigSchema>;
  private readonly traces: Trace[] = [];
  private readonly rewards: number[] = [];

  constructor(config: GrpoConfig = { type: 'grpo' }) {
    this.config = GrpoConfigSchema.parse(config);
  }

  scoreGroup(episodes: readonly Episode[]): void {
    const traces = this.traces;
    const rewards = this.rewards;
    traces.length = 0;
    rewards.length = 0;
    trainableTraces(episodes, traces);
    const n = traces.length;
    if (n === 0) return;
    for (let i = 0; i < n; i++) rewards.push(traceReward(traces[i]!));
    if (this.config.lengthPenalty) applyLengthPenalty(traces, rewards, this.config.lengthPenalty);
    centre(traces, rewards);
    traces.length = 0;
  }
}

/** Assigns `r_i − mean(r)` to each trace; exactly 0 when all rewards are equal (or n = 1). */
function centre(traces: readonly Trace[], rewards: readonly number[]): void {
  const n = traces.length;
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const r = rewards[i]!;
    sum += r;
    if (r < min) min = r;
    if (r > max) max = r;
  }
  if (min === max) {
    for (let i = 0; i < n; i++) assignAdvantages(traces[i]!, 0);
    return;
  }
  const mean = sum / n;
  for (let i = 0; i < n; i++) assignAdvantages(traces[i]!, rewards[i]! - mean);
}

function applyLengthPenalty(traces: readonly Trace[], rewards: number[], penalty: LinearLengthPenalty): void {
  const n = traces.length;
  const out = new Array<number>(n);
  const input = new Array<number>(n);
  const turns = new Array<number>(n);
  let maxOut = 1;
  let maxIn = 1;
  let maxTurns = 1;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    let o = 0;
    let p = 0;
    let t = 0;
    for (const node of traces[i]!.nodes) {
      if (node.sampled) t++;
      const mask = node.mask;
      if (mask === undefined) continue;
      for (let j = 0; j < mask.length; j++) if (mask[j]) o++;
      p += mask.length;
    }
    p -= o;
    out[i] = o;
    input[i] = p;
    turns[i] = t;
    if (o > maxOut) maxOut = o;
    if (p > maxIn) maxIn = p;
    if (t > maxTurns) maxTurns = t;
    sum += rewards[i]!;
  }
  const mean = sum / n;
  for (let i = 0; i < n; i++) {
    const pen =
      mean *
      ((penalty.numOutputTokensWeight * out[i]!) / maxOut +
        (penalty.numInputTokensWeight * input[i]!) / maxIn +
        (penalty.numTurnsWeight * turns[i]!) / maxTurns);
    rewards[i] = rewards[i]! - pen;
  }
}
