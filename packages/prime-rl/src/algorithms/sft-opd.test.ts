import { ConfigError } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { BatchBuilder } from '../samples/batch-builder.ts';
import { makeEpisode, makeTrace } from './__fixtures__/episodes.ts';
import type { FrozenModelReference } from './algorithm.ts';
import { Grpo } from './grpo.ts';
import { Opd } from './opd.ts';
import { createAlgorithm } from './registry.ts';
import { Sft } from './sft.ts';

/** A fake teacher: logprob −0.1·id for every token but the first (0, it has no context). */
const teacher = {
  connected: [] as FrozenModelReference[],
  async connect(reference: FrozenModelReference) {
    teacher.connected.push(reference);
    return { score: async (ids: readonly number[]) => ids.map((id, i) => (i === 0 ? 0 : -0.1 * id)) };
  },
};

describe('Sft', () => {
  it("is built from config with each task's `answer` field by default, and names a bad field", () => {
    const sft = createAlgorithm({ type: 'sft' }) as Sft;
    expect(sft.replies).toEqual({ field: 'answer' });
    expect(sft.actionLoss).toBe('ce');
    expect((createAlgorithm({ type: 'sft', replies: { traces: 'runs/a/traces.jsonl' } }) as Sft).replies).toEqual({
      traces: 'runs/a/traces.jsonl',
    });
    expect(() => createAlgorithm({ type: 'sft', replies: { column: 'x' } })).toThrow(/algorithm\.replies/);
  });

  it('routes its samples to ce (rl weight 0, ce weight 1 on the given tokens) and the zero-advantage filter keeps them', () => {
    const sft = new Sft();
    const trace = makeTrace({ reward: 0, turns: [{ prompt: [1, 2], completion: [7, 5] }] });
    const episode = makeEpisode({ traces: [trace] });
    sft.scoreGroup([episode]);
    const builder = new BatchBuilder({ batchSize: 10 });
    builder.addEpisodes([episode], { actionLoss: sft.actionLoss });
    const [sample] = builder.flush()?.samples ?? [];
    expect(sample?.mask).toEqual([false, false, true, true]);
    expect(sample?.advantages).toEqual([0, 0, 0, 0]);
    expect(sample?.rlWeights).toEqual([0, 0, 0, 0]);
    expect(sample?.ceWeights).toEqual([0, 0, 1, 1]);
    expect(sample?.refKlWeights).toBeUndefined();
  });
});

describe('Opd', () => {
  it('needs a teacher checkpoint, named in the error', () => {
    expect(() => createAlgorithm({ type: 'opd' })).toThrow(/algorithm\.teacher/);
    expect(() => createAlgorithm({ type: 'opd', teacher: { checkpoint: '' } })).toThrow(/algorithm\.teacher/);
    expect(createAlgorithm({ type: 'opd', teacher: { checkpoint: 'runs/t/checkpoint' } }).actionLoss).toBe('ref_kl');
  });

  it('refuses to score before its teacher is connected', async () => {
    const opd = new Opd({ type: 'opd', teacher: { checkpoint: 'c' } });
    await expect(opd.scoreEpisode(makeEpisode({ traces: [makeTrace({})] }))).rejects.toThrow(/teacher is not connected/);
  });

  it("puts the teacher's logprobs of each branch on the sampled tokens and routes them to ref_kl", async () => {
    const opd = new Opd({ type: 'opd', teacher: { checkpoint: 'runs/t/checkpoint' } });
    await opd.setup(teacher);
    expect(teacher.connected.at(-1)).toEqual({ checkpoint: 'runs/t/checkpoint' });
    // Two turns on one branch, then a second branch that shares nothing.
    const trace = makeTrace({
      turns: [
        { prompt: [1, 2], completion: [3] },
        { prompt: [4], completion: [5, 6], tokenParent: 0 },
        { prompt: [8, 9], completion: [10], tokenParent: null },
      ],
    });
    const frozen = makeTrace({ trainable: false });
    const episode = makeEpisode({ traces: [trace, frozen] });
    await opd.scoreEpisode(episode);
    opd.scoreGroup([episode]);
    const builder = new BatchBuilder({ batchSize: 10 });
    builder.addEpisodes([episode], { actionLoss: opd.actionLoss });
    const samples = builder.flush()?.samples ?? [];
    expect(samples.map((s) => s.tokenIds)).toEqual([
      [1, 2, 3, 4, 5, 6],
      [8, 9, 10],
    ]);
    // The branch's own scoring: −0.1·id on sampled tokens, 0 elsewhere.
    expect(samples[0]?.refLogprobs?.map((x) => Number(x.toFixed(6)))).toEqual([0, 0, -0.3, 0, -0.5, -0.6]);
    expect(samples[0]?.refKlWeights).toEqual([0, 0, 1, 0, 1, 1]);
    expect(samples[0]?.rlWeights).toEqual([0, 0, 0, 0, 0, 0]);
    expect(samples[1]?.refLogprobs?.map((x) => Number(x.toFixed(6)))).toEqual([0, 0, -1]);
  });
});

describe('Opd with a teacher that fails', () => {
  it('a teacher error fails that episode alone: its traces record it and do not train; a config error ends the run', async () => {
    const opd = new Opd({ type: 'opd', teacher: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'teacher' } });
    let fail: Error = new Error(
      'the teacher answered 400: The decoder prompt (length 9) is longer than the maximum model length of 8.',
    );
    await opd.setup({
      connect: async () => ({
        score: async () => {
          throw fail;
        },
      }),
    });
    const episode = makeEpisode({ traces: [makeTrace({ turns: [{ prompt: [1], completion: [2] }] })] });
    await opd.scoreEpisode(episode);
    expect(episode.ok).toBe(false);
    expect(episode.traces[0]?.errors[0]?.message).toMatch(/maximum model length/);
    opd.scoreGroup([episode]);
    const builder = new BatchBuilder({ batchSize: 10 });
    builder.addEpisodes([episode], { actionLoss: opd.actionLoss });
    expect(builder.flush()?.samples ?? []).toEqual([]);
    fail = new ConfigError("teacher: the teacher's tokenizer differs from the student's");
    await expect(
      opd.scoreEpisode(makeEpisode({ traces: [makeTrace({ turns: [{ prompt: [1], completion: [2] }] })] })),
    ).rejects.toThrow(/tokenizer differs/);
  });
});

describe('one run, several algorithms', () => {
  it('a grpo group and an sft group fill one batch: rl samples carry no streams, sft samples ce', () => {
    const grpo = new Grpo({ type: 'grpo' });
    const sft = new Sft();
    const rlGroup = [0, 1].map((index) =>
      makeEpisode({ groupId: 'g-rl', index, traces: [makeTrace({ reward: index, turns: [{ prompt: [1], completion: [2] }] })] }),
    );
    const sftGroup = [makeEpisode({ groupId: 'g-sft', traces: [makeTrace({ turns: [{ prompt: [1], completion: [4] }] })] })];
    grpo.scoreGroup(rlGroup);
    sft.scoreGroup(sftGroup);
    const builder = new BatchBuilder({ batchSize: 10 });
    builder.addEpisodes(rlGroup);
    builder.addEpisodes(sftGroup, { actionLoss: sft.actionLoss });
    const samples = builder.flush()?.samples ?? [];
    expect(samples.map((s) => s.advantages[1])).toEqual([-0.5, 0.5, 0]);
    expect(samples.map((s) => s.ceWeights)).toEqual([undefined, undefined, [0, 1]]);
    expect(samples.map((s) => s.rlWeights)).toEqual([undefined, undefined, [0, 0]]);
  });
});
