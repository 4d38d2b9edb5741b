import { describe, expect, it } from 'vitest';
import { makeEpisode, makeTrace } from '../algorithms/__fixtures__/episodes.ts';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { BatchBuilder } from './batch-builder.ts';
import type { TrainingSample } from './training-sample.ts';
import { filterZeroAdvantages } from './zero-advantage-filter.ts';

const sample = (traceId: string, length: number, advantage = 1): TrainingSample => ({
  tokenIds: Array.from({ length }, (_, i) => i),
  mask: Array.from({ length }, () => true),
  logprobs: Array.from({ length }, () => -1),
  advantages: Array.from({ length }, () => advantage),
  env: 'env',
  role: 'solver',
  traceId,
  episodeId: 'e',
  branch: 0,
});

describe('filterZeroAdvantages', () => {
  it('clears mask bits with advantage 0 and drops samples left with none', () => {
    const mixed = { ...sample('a', 3), advantages: [0, 2, 0] };
    const { samples, droppedSamples, maskedTokens } = filterZeroAdvantages([mixed, sample('b', 2, 0)]);
    expect(samples).toEqual([mixed]);
    expect(mixed.mask).toEqual([false, true, false]);
    expect(droppedSamples).toBe(1);
    expect(maskedTokens).toBe(4);
  });
});

describe('BatchBuilder', () => {
  it('cuts at batchSize traces, keeping the branches of one trace together', () => {
    const builder = new BatchBuilder({ batchSize: 2 });
    const batches = builder.addSamples([sample('a', 1), sample('a', 1), sample('b', 1), sample('c', 1)]);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.samples.map((s) => s.traceId)).toEqual(['a', 'a', 'b']);
    expect(batches[0]!.numTraces).toBe(2);
    expect(builder.pendingTraces).toBe(1);
    expect(builder.flush()?.samples.map((s) => s.traceId)).toEqual(['c']);
    expect(builder.flush()).toBeNull();
  });

  it('cuts by token count without overflowing unless a single trace does', () => {
    const builder = new BatchBuilder({ tokenBatchSize: 10 });
    const batches = builder.addSamples([sample('a', 4), sample('b', 4), sample('c', 4), sample('d', 12)]);
    expect(batches.map((b) => [b.numTraces, b.numTokens])).toEqual([
      [2, 8],
      [1, 4],
      [1, 12],
    ]);
  });

  it('applies the zero-advantage filter after the cut (no backfill), and can turn it off', () => {
    const on = new BatchBuilder({ batchSize: 2 }).addSamples([sample('a', 1, 0), sample('b', 1, 1)]);
    expect(on[0]).toMatchObject({ numTraces: 2, droppedSamples: 1 });
    expect(on[0]!.samples.map((s) => s.traceId)).toEqual(['b']);
    const off = new BatchBuilder({ batchSize: 2, filterZeroAdvantages: false }).addSamples([
      sample('a', 1, 0),
      sample('b', 1, 1),
    ]);
    expect(off[0]!.samples).toHaveLength(2);
  });

  it('builds samples from scored episodes', () => {
    const trace = makeTrace({ reward: 1 });
    assignAdvantages(trace, 0.5);
    const [batch] = new BatchBuilder({ batchSize: 1 }).addEpisodes([makeEpisode({ traces: [trace] })]);
    expect(batch!.samples[0]!.advantages).toEqual([0, 0, 0.5]);
  });

  it('cuts scored episodes by token count, moving a trace that would overflow into the next batch', () => {
    const traces = [1, 2, 3].map((i) => makeTrace({ id: `t${i}`, turns: [{ prompt: [1, 2], completion: [3, 4] }] }));
    for (const trace of traces) assignAdvantages(trace, 1);
    const builder = new BatchBuilder({ tokenBatchSize: 10 });
    const batches = builder.addEpisodes([makeEpisode({ traces })]);
    expect(batches.map((b) => b.samples.map((s) => s.traceId))).toEqual([['t1', 't2']]);
    expect(builder.flush()?.samples.map((s) => s.traceId)).toEqual(['t3']);
  });

  it('refuses a config with both or neither budget, naming the field', () => {
    expect(() => new BatchBuilder({})).toThrow(/batch\.batchSize: give exactly one/);
    expect(() => new BatchBuilder({ batchSize: 2, tokenBatchSize: 3 })).toThrow(/exactly one/);
    expect(() => new BatchBuilder({ batchSize: 0 })).toThrow(/batch\.batchSize/);
  });
});
