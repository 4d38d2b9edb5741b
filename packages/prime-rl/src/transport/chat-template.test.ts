import { type Message, Trace } from '@troupe/verifiers';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { renderQwen3Chat, VllmShapedServer } from '../testing.ts';
import { InferencePool } from './inference-pool.ts';
import { traceToWireSamples } from './wire-sample.ts';

// A Qwen3 model behind vLLM re-renders earlier assistant turns without their <think> block, so a
// multi-turn rollout's second prompt is not the first prompt + reply: the trace must then yield a
// sample per turn, each with its own prompt, never one sequence whose mask or logprobs shift.
describe('multi-turn token ids against a Qwen3-style chat template', () => {
  let model: ScriptedModelServer;
  let vllm: VllmShapedServer;
  beforeEach(async () => {
    const replies = ['<think>\nI hold K.\n</think>\n\n[bet]', '<think>\nThey called.\n</think>\n\n[check]'];
    model = await ScriptedModelServer.start({ script: (_r, { callIndex }) => replies[callIndex] as string, vllmTokens: true });
    vllm = await VllmShapedServer.start({ upstream: model.url, chatTemplate: 'qwen3' });
  });
  afterEach(async () => {
    await vllm.close();
    await model.close();
  });

  it('renders history without <think>, and splits the trace into one sample per turn with aligned mask and logprobs', async () => {
    expect(
      renderQwen3Chat([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: '<think>\nx\n</think>\n\nb' },
        { role: 'user', content: 'c' },
      ]),
    ).toBe(
      '<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n',
    );

    const pool = new InferencePool({ baseUrls: [vllm.baseUrl], model: 'policy' });
    const rollout = pool.rollout();
    const trace = new Trace({ id: 't', task: { key: 'k', hash: 'h', data: {} }, agent: { name: 'player0', trainable: true } });
    const meta = { dialect: 'chat', startedAt: 0, durationMs: 1 };
    const first: Message[] = [
      { role: 'system', content: 'Kuhn poker. Your card: K.' },
      { role: 'user', content: 'History: none. [check] or [bet]?' },
    ];
    const r1 = await rollout.complete({ model: 'main', messages: first, sampling: { temperature: 1 } });
    trace.recordCall({ model: 'main', messages: first, sampling: { temperature: 1 } }, r1, meta);
    const second: Message[] = [...first, r1.message, { role: 'user', content: 'History: bet call. Showdown?' }];
    const r2 = await rollout.complete({ model: 'main', messages: second, sampling: { temperature: 1 } });
    trace.recordCall({ model: 'main', messages: second, sampling: { temperature: 1 } }, r2, meta);

    const turn1 = [...(r1.promptTokenIds ?? []), ...(r1.completionTokenIds ?? [])];
    const prompt2 = r2.promptTokenIds ?? [];
    // The re-rendered history dropped turn 1's reasoning: prompt 2 does not extend turn 1.
    expect(prompt2.slice(0, turn1.length)).not.toEqual(turn1);
    expect(r1.completionTokenIds?.length).toBeGreaterThan(3);

    assignAdvantages(trace, 0.5);
    const samples = traceToWireSamples({ trace, env: 'kuhn-poker', episodeId: 'e' });
    expect(samples).toHaveLength(2);
    for (const [sample, response] of [
      [samples[0], r1],
      [samples[1], r2],
    ] as const) {
      const prompt = response.promptTokenIds ?? [];
      const completion = response.completionTokenIds ?? [];
      expect(sample?.tokenIds).toEqual([...prompt, ...completion]);
      expect(sample?.mask).toEqual([...prompt.map(() => false), ...completion.map(() => true)]);
      expect(sample?.logprobs).toEqual([...prompt.map(() => 0), ...(response.completionLogprobs ?? [])]);
      expect(sample?.advantages).toEqual([...prompt.map(() => 0), ...completion.map(() => 0.5)]);
    }
    expect(vllm.refusedModels).toEqual([]);
  });
});
