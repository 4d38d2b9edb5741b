import { decode } from '@msgpack/msgpack';
import { Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import type { TrainingSample } from '../samples/training-sample.ts';
import { packAndEncode } from './encode-planned.ts';
import { unpackMicroBatches } from './loopback.ts';
import { decodeMicroBatches, MICRO_BATCH_FIELDS } from './micro-batch.ts';
import { toWireSample, traceToWireSamples } from './wire-sample.ts';

const meta = { dialect: 'chat', startedAt: 0, durationMs: 1 };

function twoTurnTrace(temperatures: [number | undefined, number | undefined], options: { diverge?: boolean } = {}): Trace {
  const trace = new Trace({ id: 't1', task: { key: 'k', hash: 'h', data: {} }, agent: { name: 'player0', trainable: true } });
  const first = [{ role: 'user' as const, content: 'your card is K' }];
  trace.recordCall(
    { model: 'policy', messages: first, sampling: temperatures[0] === undefined ? {} : { temperature: temperatures[0] } },
    {
      id: 'r1',
      model: 'policy',
      message: { role: 'assistant', content: 'bet' },
      finishReason: 'stop',
      usage: { promptTokens: 3, completionTokens: 2 },
      promptTokenIds: [1, 2, 3],
      completionTokenIds: [10, 11],
      completionLogprobs: [-0.5, -0.25],
    },
    meta,
  );
  const second = [...first, { role: 'assistant' as const, content: 'bet' }, { role: 'user' as const, content: 'they call' }];
  trace.recordCall(
    { model: 'policy', messages: second, sampling: temperatures[1] === undefined ? {} : { temperature: temperatures[1] } },
    {
      id: 'r2',
      model: 'policy',
      message: { role: 'assistant', content: 'ok' },
      finishReason: 'stop',
      usage: { promptTokens: 6, completionTokens: 1 },
      promptTokenIds: options.diverge ? [7, 7, 7] : [1, 2, 3, 10, 11, 4],
      completionTokenIds: [12],
      completionLogprobs: [-0.125],
    },
    meta,
  );
  return trace;
}

describe('traceToWireSamples', () => {
  it('gives every token of a turn the temperature its call was sampled with', () => {
    const trace = twoTurnTrace([0.7, 1.2]);
    assignAdvantages(trace, 0.5);
    const [sample, ...rest] = traceToWireSamples({ trace, env: 'kuhn-poker', episodeId: 'e1' });
    expect(rest).toEqual([]);
    expect(sample!.tokenIds).toEqual([1, 2, 3, 10, 11, 4, 12]);
    expect(sample!.mask).toEqual([false, false, false, true, true, false, true]);
    expect(sample!.temperatures).toEqual([0.7, 0.7, 0.7, 0.7, 0.7, 1.2, 1.2]);
    expect(sample!.envName).toBe('kuhn-poker');
  });

  it('uses the default temperature for a call that set none, and follows divergent branches', () => {
    const trace = twoTurnTrace([undefined, 0.3], { diverge: true });
    assignAdvantages(trace, 1);
    const samples = traceToWireSamples({ trace, env: 'e', episodeId: 'e1', defaultTemperature: 0.9 });
    expect(samples.map((sample) => sample.tokenIds)).toEqual([
      [1, 2, 3, 10, 11],
      [7, 7, 7, 12],
    ]);
    expect(samples.map((sample) => sample.temperatures)).toEqual([
      [0.9, 0.9, 0.9, 0.9, 0.9],
      [0.3, 0.3, 0.3, 0.3],
    ]);
  });
});

describe('loss routing streams on the wire', () => {
  const base = (traceId: string, tokenIds: number[]): TrainingSample => ({
    tokenIds,
    mask: tokenIds.map((_, i) => i >= 2),
    logprobs: tokenIds.map((_, i) => (i >= 2 ? -0.5 : 0)),
    advantages: tokenIds.map((_, i) => (i >= 2 ? 1 : 0)),
    env: 'e',
    role: 'agent',
    traceId,
    episodeId: 'ep',
    branch: 0,
  });
  // An rl sample (no streams), an sft sample (ce on its reply) and an opd sample (ref_kl + teacher logprobs).
  const rl = base('rl', [1, 2, 3, 4]);
  const sft = { ...base('sft', [1, 2, 5]), advantages: [0, 0, 0], rlWeights: [0, 0, 0], ceWeights: [0, 0, 1] };
  const opd = {
    ...base('opd', [1, 2, 6, 7]),
    advantages: [0, 0, 0, 0],
    rlWeights: [0, 0, 0, 0],
    refKlWeights: [0, 0, 1, 1],
    refLogprobs: [0, -1.5, -0.25, -0.75],
  };

  it('packs rl_weights, ce_weights, ref_kl_weights and ref_logprobs into their MicroBatch fields, filling absent ones as prime-rl does', () => {
    const samples = [rl, sft, opd].map((s) => toWireSample(s, { temperatures: 1 }));
    const [bytes] = packAndEncode({ samples, seqLen: 16, dataWorldSize: 1 });
    const raw = decode(bytes!) as unknown[][];
    expect(raw).toHaveLength(1);
    const fields = raw[0]!;
    expect(fields).toHaveLength(16);
    const field = (name: (typeof MICRO_BATCH_FIELDS)[number]) => fields[MICRO_BATCH_FIELDS.indexOf(name)];
    // First-fit-decreasing: the 4-token samples in input order (rl, opd), then sft.
    expect(field('input_ids')).toEqual([1, 2, 3, 4, 1, 2, 6, 7, 1, 2, 5]);
    // Absent rl stream = 1.0, absent ce / ref_kl = 0.0, absent ref_logprobs = 0.0 (prime-rl
    // `src/prime_rl/trainer/batch.py:14` STREAM_FILL).
    expect(field('rl_weights')).toEqual([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect(field('ce_weights')).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    expect(field('ref_kl_weights')).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0]);
    expect(field('ref_logprobs')).toEqual([0, 0, 0, 0, 0, -1.5, -0.25, -0.75, 0, 0, 0]);
    // A trainer rank reading it back gets each sample with its streams (the loopback trainer's view).
    const unpacked = unpackMicroBatches(decodeMicroBatches({ bytes: bytes! }));
    expect(unpacked.map((s) => s.tokenIds)).toEqual([rl.tokenIds, opd.tokenIds, sft.tokenIds]);
    expect(unpacked[2]?.ceWeights).toEqual([0, 0, 1]);
    expect(unpacked[1]?.refLogprobs).toEqual([0, -1.5, -0.25, -0.75]);
  });

  it('a sample without streams writes none: the nine required fields only', () => {
    const [bytes] = packAndEncode({ samples: [toWireSample(rl, { temperatures: 1 })], seqLen: 8, dataWorldSize: 1 });
    expect((decode(bytes!) as unknown[][])[0]).toHaveLength(9);
  });
});
