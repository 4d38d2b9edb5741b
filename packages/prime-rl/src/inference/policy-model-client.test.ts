import type { Message } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { initWeights, PolicyConfigSchema } from '../policy/config.ts';
import { WordTokenizer } from '../policy/tokenizer.ts';
import { exportOnnx } from './onnx-export.ts';
import { PolicyModelClient } from './policy-model-client.ts';

const tokenizer = WordTokenizer.fromCorpus({ corpus: ['you hold the king . act : [pass] [bet]', 'they bet , your turn'] });
const config = PolicyConfigSchema.parse({
  vocabSize: tokenizer.vocab.length,
  contextLength: 48,
  dModel: 16,
  layers: 1,
  heads: 2,
  outputTokens: [tokenizer.id('[pass]'), tokenizer.id('[bet]'), tokenizer.eosId],
  seed: 2,
});

const makeClient = (seed: number) =>
  PolicyModelClient.create({ tokenizer, config, onnx: exportOnnx({ config, weights: initWeights(config) }), maxTokens: 3, seed });

describe('PolicyModelClient', () => {
  it('prompts with exactly the chat template of the conversation, also for re-sent and edited message objects', async () => {
    const client = await makeClient(1);
    const system: Message = { role: 'system', content: 'you hold the king .' };
    const turn: Message = { role: 'user', content: 'act : [pass] [bet]' };
    const messages: Message[] = [system, turn];
    const first = await client.complete({ model: 'policy', messages, sampling: {} });
    expect(first.promptTokenIds).toEqual(tokenizer.renderChat({ messages }));
    messages.push(first.message, { role: 'user', content: 'they bet , your turn' });
    const second = await client.complete({ model: 'policy', messages, sampling: {} });
    expect(second.promptTokenIds).toEqual(tokenizer.renderChat({ messages }));
    turn.content = 'your turn';
    const edited = await client.complete({ model: 'policy', messages, sampling: {} });
    expect(edited.promptTokenIds).toEqual(tokenizer.renderChat({ messages }));
    expect(edited.promptTokenIds).not.toEqual(second.promptTokenIds);
    // New objects with texts seen before (a game's next hand), the same text in another role, and an
    // edit back: each prompt is still its conversation's template.
    const again: Message[] = [
      { role: 'system', content: 'you hold the king .' },
      { role: 'user', content: 'you hold the king .' },
      { role: 'user', content: 'act : [pass] [bet]' },
    ];
    const third = await client.complete({ model: 'policy', messages: again, sampling: {} });
    expect(third.promptTokenIds).toEqual(tokenizer.renderChat({ messages: again }));
    turn.content = 'act : [pass] [bet]';
    const back = await client.complete({ model: 'policy', messages, sampling: {} });
    expect(back.promptTokenIds).toEqual(second.promptTokenIds);
    // Response ids stay distinct.
    expect(new Set([first.id, second.id, edited.id, third.id, back.id]).size).toBe(5);
  });

  it('samples the same completions and logprobs from the same seed, each continuing its own prompt', async () => {
    const messages: Message[] = [{ role: 'user', content: 'act : [pass] [bet]' }];
    const runs = await Promise.all(
      [makeClient(7), makeClient(7)].map(async (pending) => {
        const client = await pending;
        return Promise.all(
          [1, 0.5, 2].map((temperature) => client.complete({ model: 'policy', messages, sampling: { temperature } })),
        );
      }),
    );
    expect(runs[0]).toHaveLength(3);
    for (const [i, response] of (runs[0] ?? []).entries()) {
      const other = runs[1]?.[i];
      expect(response.completionTokenIds).toEqual(other?.completionTokenIds);
      expect(response.completionLogprobs).toEqual(other?.completionLogprobs);
      expect(response.promptTokenIds).toEqual(tokenizer.renderChat({ messages }));
      const completion = response.completionTokenIds ?? [];
      expect(completion.length).toBeGreaterThan(0);
      expect(completion.length <= 3).toBe(true);
      expect(response.finishReason).toBe(completion.at(-1) === tokenizer.eosId ? 'stop' : 'length');
      for (const logprob of response.completionLogprobs ?? []) expect(logprob).toBeLessThanOrEqual(0);
    }
  });

  it('names the policy version that served each call, through a weight update', async () => {
    const client = await PolicyModelClient.create({
      tokenizer,
      config,
      onnx: exportOnnx({ config, weights: initWeights(config) }),
      version: 4,
      maxTokens: 2,
    });
    const messages: Message[] = [{ role: 'user', content: 'act : [pass] [bet]' }];
    expect((await client.complete({ model: 'policy', messages, sampling: {} })).policyVersion).toBe(4);
    await client.updateWeights({ onnx: exportOnnx({ config, weights: initWeights({ ...config, seed: 9 }) }), version: 5 });
    expect((await client.complete({ model: 'policy', messages, sampling: {} })).policyVersion).toBe(5);
  });

  it('rejects a call whose signal is aborted, before it joins a forward pass, without drawing from the sampling stream', async () => {
    const client = await makeClient(5);
    const reference = await makeClient(5);
    const messages: Message[] = [{ role: 'user', content: 'act : [pass] [bet]' }];
    const controller = new AbortController();
    controller.abort(new Error('stopped by the caller'));
    await expect(client.complete({ model: 'policy', messages, sampling: {} }, { signal: controller.signal })).rejects.toThrow(
      'stopped by the caller',
    );
    expect(client.stats.batches).toBe(0);
    const [next, expected] = await Promise.all([
      client.complete({ model: 'policy', messages, sampling: {} }),
      reference.complete({ model: 'policy', messages, sampling: {} }),
    ]);
    expect(next.completionTokenIds).toEqual(expected.completionTokenIds);
    expect(next.completionLogprobs).toEqual(expected.completionLogprobs);
  });
});
