import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, ProviderError } from '../errors/troupe-error.ts';
import { RolloutSession } from '../interception/rollout-session.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';
import { scriptedCompletionTokens, scriptedPromptTokens } from '../testing/scripted-tokens.ts';
import { Trace } from '../trace/trace.ts';
import type { Message } from './messages.ts';
import { OpenAICompatibleClient } from './openai-client.ts';

let scripted: ScriptedClient | undefined;
afterEach(async () => {
  await scripted?.close();
  scripted = undefined;
});

const newTrace = () => new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
const user = (content: string): Message => ({ role: 'user', content });

describe('OpenAICompatibleClient', () => {
  it('asks for logprobs and vLLM token ids, and stores them on the trace nodes through a RolloutSession', async () => {
    scripted = await scriptedClient({
      script: [
        { content: 'four', tokens: { prompt: [1, 2, 3], completion: [40, 41], logprobs: [-0.25, -0.5] } },
        { content: 'five', tokens: { prompt: [1, 2, 3, 40, 41, 7, 8], completion: [50], logprobs: [-0.125] } },
      ],
    });
    const trace = newTrace();
    const session = new RolloutSession({ trace, client: scripted.client, model: 'policy' });
    const first = await session.handle({ model: 'x', messages: [user('2+2?')], sampling: {} }, { dialect: 'direct' });
    expect(first.promptTokenIds).toEqual([1, 2, 3]);
    expect(first.completionTokenIds).toEqual([40, 41]);
    expect(first.completionLogprobs).toEqual([-0.25, -0.5]);
    await session.handle(
      { model: 'x', messages: [user('2+2?'), first.message, user('and 2+3?')], sampling: {} },
      { dialect: 'direct' },
    );

    const body = scripted.server.requests[0]?.body as Record<string, unknown>;
    expect(body.logprobs).toBe(true);
    expect(body.return_token_ids).toBe(true);
    const [a, b] = trace.calls.map((call) => trace.node(call.node!));
    expect(a).toMatchObject({
      tokenIds: [1, 2, 3, 40, 41],
      mask: [false, false, false, true, true],
      logprobs: [-0.25, -0.5],
      tokenParent: null,
    });
    expect(b).toMatchObject({ tokenIds: [7, 8, 50], mask: [false, false, true], logprobs: [-0.125], tokenParent: a!.id });
    expect(trace.tokenSequence(b!.id)).toEqual([1, 2, 3, 40, 41, 7, 8, 50]);
  });

  it('gets deterministic token ids from the scripted server (vllmTokens) that bridge across turns', async () => {
    scripted = await scriptedClient({ script: ['I will check.', 'Done now.'], vllmTokens: true });
    const trace = newTrace();
    const session = new RolloutSession({ trace, client: scripted.client, model: 'policy' });
    const messages: Message[] = [{ role: 'system', content: 'Be helpful.' }, user('check the thing')];
    const first = await session.handle({ model: 'x', messages, sampling: {} }, { dialect: 'direct' });
    expect(first.promptTokenIds).toEqual(scriptedPromptTokens(messages));
    expect(first.completionTokenIds).toEqual(scriptedCompletionTokens(first.message));
    const second = await session.handle(
      { model: 'x', messages: [...messages, first.message, user('thanks')], sampling: {} },
      { dialect: 'direct' },
    );
    const node = trace.node(trace.calls[1]!.node!);
    expect(node.tokenParent).toBe(trace.calls[0]!.node);
    expect(trace.tokenSequence(node.id)).toEqual([...second.promptTokenIds!, ...second.completionTokenIds!]);
    expect(node.logprobs).toHaveLength(second.completionTokenIds!.length);
  });

  it('reads token ids from token_id:<n> logprob tokens when token_ids is absent, and omits return_token_ids when asked', async () => {
    scripted = await scriptedClient({
      script: [{ content: 'x', tokens: { prompt: [9], completion: [70, 71] } }],
      client: { returnTokenIds: false },
    });
    const response = await scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} });
    expect((scripted.server.requests[0]!.body as Record<string, unknown>).return_token_ids).toBeUndefined();
    expect(response.completionTokenIds).toEqual([70, 71]);
    expect(response.promptTokenIds).toBeUndefined();
    expect(response.completionLogprobs).toHaveLength(2);
  });

  it('maps reasoning_content, tool calls and usage with cached and reasoning tokens', async () => {
    scripted = await scriptedClient({
      script: [
        {
          reasoning: 'think',
          toolCalls: [{ id: 'call_9', name: 'bash', arguments: '{"command":"ls"}' }],
          usage: { promptTokens: 10, completionTokens: 5, cachedInputTokens: 4, reasoningTokens: 2 },
        },
      ],
    });
    const response = await scripted.client.complete({
      model: 'm',
      messages: [user('q')],
      tools: [{ name: 'bash', parameters: { type: 'object' } }],
      toolChoice: 'required',
      sampling: { temperature: 0.5, maxTokens: 100, extra: { top_k: 20 } },
    });
    expect(response.message).toEqual({
      role: 'assistant',
      content: null,
      reasoning: 'think',
      toolCalls: [{ id: 'call_9', name: 'bash', arguments: '{"command":"ls"}' }],
    });
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({ promptTokens: 10, completionTokens: 5, cachedInputTokens: 4, reasoningTokens: 2 });
    const body = scripted.server.requests[0]?.body as Record<string, unknown>;
    expect(body).toMatchObject({ temperature: 0.5, max_tokens: 100, top_k: 20, tool_choice: 'required' });
  });

  it('sends injected headers and merges sampling defaults under the request sampling', async () => {
    scripted = await scriptedClient({
      script: () => 'ok',
      apiKey: 'sk-test',
      client: { headers: { 'x-run': 'r1' }, sampling: { temperature: 0.1, topP: 0.9 } },
    });
    await scripted.client.complete({ model: '', messages: [user('q')], sampling: { temperature: 0.7 } });
    const entry = scripted.server.requests[0]!;
    expect(entry.headers['x-run']).toBe('r1');
    expect(entry.headers.authorization).toBe('Bearer sk-test');
    expect(entry.body).toMatchObject({ model: 'scripted-model', temperature: 0.7, top_p: 0.9 });
  });

  it('retries a 429 that carries retry-after, then succeeds', async () => {
    scripted = await scriptedClient({
      script: [
        { error: { status: 429, message: 'busy', headers: { 'retry-after': '0' } } },
        { error: { status: 503, headers: { 'retry-after-ms': '5' } } },
        'finally',
      ],
    });
    const response = await scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} });
    expect(response.message.content).toBe('finally');
    expect(scripted.server.calls).toBe(3);
    // The SDK's own retries are off: each attempt is exactly one HTTP request.
    expect(scripted.server.requests).toHaveLength(3);
  });

  it('retries connection resets, truncated and malformed bodies', async () => {
    scripted = await scriptedClient({ script: [{ fault: 'reset' }, { fault: 'truncated' }, { fault: 'malformed' }, 'ok'] });
    const response = await scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} });
    expect(response.message.content).toBe('ok');
    expect(scripted.server.calls).toBe(4);
  });

  it('gives up after the retry budget with a ProviderError carrying the status', async () => {
    scripted = await scriptedClient({
      script: () => ({ error: { status: 503, message: 'overloaded' } }),
      client: { retry: { maxRetries: 2, baseDelayMs: 1 } },
    });
    const error = await scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(ProviderError.is(error)).toBe(true);
    expect((error as ProviderError).statusCode).toBe(503);
    expect((error as ProviderError).message).toMatch(/overloaded.*after 3 attempts/);
    expect(scripted.server.calls).toBe(3);
  });

  it('does not retry a 400 (e.g. a context-length error)', async () => {
    scripted = await scriptedClient({
      script: () => ({ error: { status: 400, message: "This model's maximum context length is 4096 tokens" } }),
    });
    const error = await scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as ProviderError).statusCode).toBe(400);
    expect(scripted.server.calls).toBe(1);
  });

  it('stops retrying when the caller aborts', async () => {
    scripted = await scriptedClient({
      script: () => ({ error: { status: 500 } }),
      client: { retry: { maxRetries: 50, baseDelayMs: 20 } },
    });
    const controller = new AbortController();
    const pending = scripted.client.complete({ model: 'm', messages: [user('q')], sampling: {} }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('cancelled by test')), 30);
    await expect(pending).rejects.toThrow();
    expect(scripted.server.calls).toBeLessThan(50);
  });

  it('rejects bad options at construction, naming the field', () => {
    expect(() => new OpenAICompatibleClient({ baseUrl: 'not a url', apiKey: 'k', model: 'm' })).toThrow(ConfigError);
    expect(
      () => new OpenAICompatibleClient({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k', model: 'm', retry: { maxRetries: -1 } }),
    ).toThrow(/retry\.maxRetries/);
  });
});
