import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFleetPath } from './support/fleet-path.ts';
import { IM_END, VllmFleet } from './support/vllm-fleet.ts';

describe('the fleet path', () => {
  it('records the committed episodes and rank files byte for byte', async () => {
    // Performance work on interception, recording, samples, packing or encoding must not change
    // what a run records: two groups of the multi-turn env, GRPO, two data ranks.
    const fixture = readFileSync(join(import.meta.dirname, '__fixtures__/fleet-path.json'), 'utf8');
    const record = await runFleetPath({ groups: 2, groupSize: 4 });
    const expected = JSON.parse(fixture) as typeof record;
    expect(Object.keys(record.ranks)).toEqual(Object.keys(expected.ranks));
    expect(record.ranks).toEqual(expected.ranks);
    expect(`${JSON.stringify(record)}\n`).toBe(fixture);
  });
});

/** The parts of a vLLM chat completion (or error) these tests read. */
interface Reply {
  choices: {
    finish_reason: string;
    message: { content: string };
    token_ids: number[];
    logprobs: { content: { token: string; bytes: number[]; top_logprobs: unknown[] }[] };
  }[];
  usage: { completion_tokens: number };
  prompt_token_ids: number[];
  error: { message: string; type: string; param: string | null; code: number };
}

describe('VllmFleet', () => {
  let fleet: VllmFleet;
  const post = async (body: Record<string, unknown>) => {
    const response = await fetch(`${fleet.baseUrls[0]}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Reply };
  };
  const messages = [{ role: 'user', content: 'Tell a story.' }];

  beforeAll(async () => {
    fleet = await VllmFleet.start({ servers: 1, latencyMs: 0, tokensPerSecond: 1e9, medianTokens: 30, replies: 4 });
  });
  afterAll(() => fleet.close());

  it('answers with token ids, one logprob entry per token and the prompt ids when asked', async () => {
    const { status, body } = await post({ model: 'policy', messages, logprobs: true, return_token_ids: true });
    expect(status).toBe(200);
    const choice = body.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.token_ids.at(-1)).toBe(IM_END);
    expect(choice.logprobs.content).toHaveLength(choice.token_ids.length);
    expect(choice.logprobs.content[0]).toMatchObject({ top_logprobs: [] });
    const entry = choice.logprobs.content[0]!;
    expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
    expect(body.usage.completion_tokens).toBe(choice.token_ids.length);
    expect(body.prompt_token_ids).toEqual(fleet.tokenizer.prompt(messages));
  });

  it('leaves logprobs and token ids out unless asked', async () => {
    const { body } = await post({ model: 'policy', messages });
    expect(body.choices[0]!.logprobs).toBeNull();
    expect(body.choices[0]!.token_ids).toBeNull();
    expect(body.prompt_token_ids).toBeNull();
  });

  it('continues the last prompt and completion in the next prompt', async () => {
    const first = await post({ model: 'policy', messages, return_token_ids: true });
    const reply = first.body.choices[0]!;
    const next = [...messages, { role: 'assistant', content: reply.message.content }, { role: 'user', content: 'Go on.' }];
    const second = await post({ model: 'policy', messages: next, return_token_ids: true });
    const prefix = [...first.body.prompt_token_ids, ...reply.token_ids];
    expect(second.body.prompt_token_ids.slice(0, prefix.length)).toEqual(prefix);
  });

  it('cuts a reply at max_tokens with finish_reason length and no end-of-turn token', async () => {
    const { body } = await post({ model: 'policy', messages, logprobs: true, return_token_ids: true, max_tokens: 3 });
    expect(body.choices[0]!.finish_reason).toBe('length');
    expect(body.choices[0]!.token_ids).toHaveLength(3);
    expect(body.choices[0]!.token_ids).not.toContain(IM_END);
    expect(body.choices[0]!.logprobs.content).toHaveLength(3);
  });

  it('refuses what vLLM refuses: a model it does not serve, a bad cache_salt, no messages, too long a request', async () => {
    const wrong = await post({ model: 'other', messages });
    expect(wrong.status).toBe(404);
    expect(wrong.body.error).toMatchObject({ type: 'NotFoundError', param: 'model', code: 404 });
    expect((await post({ model: 'policy', messages, cache_salt: '' })).status).toBe(400);
    expect((await post({ model: 'policy' })).status).toBe(400);
    const long = await post({ model: 'policy', messages, max_tokens: 40_000 });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain('maximum context length is 32768 tokens');
  });
});
