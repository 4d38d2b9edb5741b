import { Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { traceToWireSamples } from './wire-sample.ts';

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
