import type { Trace } from '@troupe/verifiers';
import { WireError } from '@troupe/verifiers';
import { tokenChains, traceToSamples } from '../samples/trace-to-samples.ts';
import type { TrainingSample } from '../samples/training-sample.ts';
import type { WireSample } from './micro-batch.ts';

/**
 * A troupe `TrainingSample` in prime-rl's `TrainingSample` form: the same per-token ids, mask,
 * logprobs and advantages, the env as `envName`, the sampling temperature (one for the whole
 * sample, or per token when a rollout changed it between turns), and the loss routing streams
 * (`rlWeights`, `ceWeights`, `refKlWeights`, `refLogprobs`) when the sample has them — packing
 * puts them in the `MicroBatch` fields `rl_weights`, `ce_weights`, `ref_kl_weights` and
 * `ref_logprobs`. Role, trace, episode and branch go to `provenance` (not on the wire; the sample
 * export keeps them).
 */
export function toWireSample(sample: TrainingSample, options: { temperatures: number | readonly number[] }): WireSample {
  const wire: WireSample = {
    tokenIds: sample.tokenIds,
    mask: sample.mask,
    logprobs: sample.logprobs,
    temperatures: options.temperatures,
    envName: sample.env,
    advantages: sample.advantages,
    provenance: { role: sample.role, traceId: sample.traceId, episodeId: sample.episodeId, branch: sample.branch },
  };
  if (sample.rlWeights) wire.rlWeights = sample.rlWeights;
  if (sample.ceWeights) wire.ceWeights = sample.ceWeights;
  if (sample.refKlWeights) wire.refKlWeights = sample.refKlWeights;
  if (sample.refLogprobs) wire.refLogprobs = sample.refLogprobs;
  return wire;
}

/** Options of {@link traceToWireSamples}. */
export interface TraceToWireSamplesOptions {
  trace: Trace;
  env: string;
  episodeId: string;
  /** Temperature of a call that recorded none (the server's default; 1 unless told). */
  defaultTemperature?: number;
}

/**
 * The samples of one scored trace (see `traceToSamples`) with per-token temperatures read from
 * the trace's recorded calls: every token of a sampled node gets the temperature its call was
 * made with (`trace.calls[].sampling.temperature`), which the trainer divides its logits by.
 */
export function traceToWireSamples(options: TraceToWireSamplesOptions): WireSample[] {
  const { trace } = options;
  const samples = traceToSamples({ trace: options.trace, env: options.env, episodeId: options.episodeId });
  if (samples.length === 0) return [];
  const fallback = options.defaultTemperature ?? 1;
  const temperatureOf = new Map<number, number>();
  for (const call of trace.calls) {
    const temperature = call.sampling.temperature;
    if (call.node !== undefined) temperatureOf.set(call.node, typeof temperature === 'number' ? temperature : fallback);
  }
  const chains = tokenChains(trace);
  if (chains.length !== samples.length) {
    throw new WireError(`trace ${trace.id}: ${samples.length} samples but ${chains.length} token branches`);
  }
  return samples.map((sample, index) => {
    const temperatures: number[] = [];
    for (const node of chains[index]!) {
      const temperature = temperatureOf.get(node.id) ?? fallback;
      for (let t = 0; t < node.tokenIds!.length; t++) temperatures.push(temperature);
    }
    if (temperatures.length !== sample.tokenIds.length) {
      throw new WireError(
        `trace ${trace.id} branch ${index}: ${temperatures.length} temperatures for ${sample.tokenIds.length} tokens`,
      );
    }
    return toWireSample(sample, { temperatures });
  });
}
