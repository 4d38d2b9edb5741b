import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultPlan } from './fault-injection.ts';
import { type ScriptContext, ScriptedModelServer } from './scripted-model-server.ts';

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const chat = (content = 'hi', extra: Record<string, unknown> = {}) =>
  fetch(`${server!.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }], ...extra }),
    signal: AbortSignal.timeout(20_000),
  });

describe('ScriptedModelServer', () => {
  it('consumes a script in order and refuses when it runs out', async () => {
    server = await ScriptedModelServer.start({ script: ['one', { content: 'two' }] });
    const program = new OpenAI({ baseURL: server.baseUrl, apiKey: 'k', maxRetries: 0 });
    const ask = async () =>
      (await program.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'q' }] })).choices[0]?.message
        .content;
    expect(await ask()).toBe('one');
    expect(await ask()).toBe('two');
    await expect(ask()).rejects.toThrow(/script exhausted after 2 replies/);
  });

  it('answers every dialect from a function told the dialect and call index', async () => {
    const seen: Pick<ScriptContext, 'dialect' | 'callIndex'>[] = [];
    server = await ScriptedModelServer.start({
      script: (request, { dialect, callIndex }) => {
        seen.push({ dialect, callIndex });
        return `${dialect}: ${request.messages.at(-1)?.content}`;
      },
    });
    const openai = new OpenAI({ baseURL: server.baseUrl, apiKey: 'k', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const chatReply = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'a' }] });
    const responsesReply = await openai.responses.create({ model: 'm', input: 'b' });
    const messagesReply = await anthropic.messages
      .stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'c' }] })
      .finalMessage();
    expect(chatReply.choices[0]?.message.content).toBe('chat: a');
    expect(responsesReply.output_text).toBe('responses: b');
    expect(messagesReply.content).toEqual([{ type: 'text', text: 'messages: c' }]);
    expect(seen).toEqual([
      { dialect: 'chat', callIndex: 0 },
      { dialect: 'responses', callIndex: 1 },
      { dialect: 'messages', callIndex: 2 },
    ]);
    expect(server.requests.map((r) => r.dialect)).toEqual(['chat', 'responses', 'messages']);
  });

  it('returns vLLM-shaped token ids and logprobs only when asked for them', async () => {
    server = await ScriptedModelServer.start({ script: () => 'two words', vllmTokens: true });
    const plain = (await (await chat()).json()) as Record<string, unknown>;
    expect(plain.prompt_token_ids).toBeUndefined();
    const withTokens = (await (await chat('hi', { return_token_ids: true, logprobs: true })).json()) as {
      prompt_token_ids: number[];
      choices: { token_ids: number[]; logprobs: { content: { token: string; logprob: number }[] } }[];
    };
    expect(withTokens.prompt_token_ids.length).toBeGreaterThan(2);
    const choice = withTokens.choices[0]!;
    expect(choice.token_ids).toHaveLength(3); // two words + end token
    expect(choice.logprobs.content.map((c) => c.token)).toEqual(choice.token_ids.map((id) => `token_id:${id}`));
  });

  it('injects each fault kind the way a broken server would', async () => {
    server = await ScriptedModelServer.start({
      script: [
        { fault: '500' },
        { fault: '503' },
        { fault: '429' },
        { fault: 'reset' },
        { fault: 'truncated' },
        { fault: 'malformed' },
        { fault: 'stream_cut' },
        { fault: 'timeout' },
      ],
    });
    expect((await chat()).status).toBe(500);
    const unavailable = await chat();
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after-ms')).toBe('10');
    expect((await chat()).status).toBe(429);
    await expect(chat()).rejects.toThrow();
    await expect(chat().then((r) => r.text())).rejects.toThrow();
    const malformed = await chat();
    expect(malformed.status).toBe(200);
    await expect(malformed.json()).rejects.toThrow(SyntaxError);
    const cut = await chat('x', { stream: true })
      .then((r) => r.text())
      .then(
        (text) => text,
        () => 'cut',
      );
    expect(cut).not.toContain('[DONE]');
    await expect(
      fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [] }),
        signal: AbortSignal.timeout(100),
      }),
    ).rejects.toThrow();
    expect(server.requests.map((r) => r.fault)).toEqual([
      '500',
      '503',
      '429',
      'reset',
      'truncated',
      'malformed',
      'stream_cut',
      'timeout',
    ]);
  });

  it('injects random faults at the configured rate, the same ones for the same seed', () => {
    const draw = (seed: number) => {
      const plan = new FaultPlan({ rate: 0.2, seed, kinds: ['500', 'reset', 'timeout'] });
      return Array.from({ length: 2000 }, () => plan.next());
    };
    const a = draw(7);
    expect(draw(7)).toEqual(a);
    expect(draw(8)).not.toEqual(a);
    const rate = a.filter(Boolean).length / a.length;
    expect(rate).toBeGreaterThan(0.15);
    expect(rate).toBeLessThan(0.25);
    expect(new Set(a.filter(Boolean))).toEqual(new Set(['500', 'reset', 'timeout']));
  });

  it('does not consume script replies on random faults, so a retry gets the next scripted answer', async () => {
    server = await ScriptedModelServer.start({ script: () => 'fine', faults: { rate: 0.5, seed: 3, kinds: ['500'] } });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await chat()).status);
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeGreaterThan(0);
    expect(ok).toBeLessThan(20);
    expect(server.calls).toBe(ok);
  });

  it('requires its api key when given one', async () => {
    server = await ScriptedModelServer.start({ script: () => 'x', apiKey: 'sk-1' });
    expect((await chat()).status).toBe(401);
  });
});
