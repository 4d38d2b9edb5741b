import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { chatDialect } from '../interception/dialects/chat.ts';
import { RolloutSession } from '../interception/rollout-session.ts';
import { Trace } from '../trace/trace.ts';
import { TraceRecordSchema } from '../trace/trace-schema.ts';
import type { ModelResponse } from './model-client.ts';
import { OpenAICompatibleClient } from './openai-client.ts';

// A policy server (troupe's `serve-inference`) renders its replies with the chat dialect; a
// reply's `policyVersion` travels as `policy_version` and lands on the recorded ModelCall.

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** Serves `/v1/chat/completions` with `reply(n)` rendered by the chat dialect, as serve-inference does. */
async function policyServer(reply: (n: number) => ModelResponse | Record<string, unknown>): Promise<string> {
  let n = 0;
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', () => {
      const parsed = chatDialect.parseRequest(JSON.parse(text));
      const answer = reply(n++);
      const body = 'message' in answer ? chatDialect.renderResponse(answer as ModelResponse, parsed) : answer;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const reply = (policyVersion?: number): ModelResponse => ({
  id: 'r',
  model: 'policy',
  message: { role: 'assistant', content: 'bet' },
  finishReason: 'stop',
  usage: { promptTokens: 3, completionTokens: 1 },
  promptTokenIds: [1, 2, 3],
  completionTokenIds: [9],
  completionLogprobs: [-0.5],
  ...(policyVersion !== undefined ? { policyVersion } : {}),
});

describe('policy version over the chat wire', () => {
  it('records the version each call was served by on the trace, and none when the server names none', async () => {
    const versions = [7, 8, undefined];
    const baseUrl = await policyServer((n) => reply(versions[n]));
    const client = new OpenAICompatibleClient({ baseUrl, apiKey: 'k', model: 'policy' });
    const trace = new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'p0', trainable: true } });
    const session = new RolloutSession({ trace, client, model: 'policy' });
    for (let i = 0; i < 3; i++)
      await session.handle(
        { model: 'x', messages: [{ role: 'user', content: `act ${i}` }], sampling: {} },
        { dialect: 'direct' },
      );
    expect(trace.calls.map((call) => call.policyVersion)).toEqual([7, 8, undefined]);
    expect('policyVersion' in (trace.calls[2] ?? {})).toBe(false);
    const saved = TraceRecordSchema.parse(JSON.parse(JSON.stringify(trace)));
    expect(saved.calls.map((call) => call.policyVersion)).toEqual([7, 8, undefined]);
  });

  it('renders policy_version only to a request that asked for token ids (a trainer), never to a plain chat client', () => {
    const plain = chatDialect.parseRequest({ model: 'm', messages: [{ role: 'user', content: 'q' }] });
    expect(chatDialect.renderResponse(reply(3), plain)).not.toHaveProperty('policy_version');
    const vllm = chatDialect.parseRequest({ model: 'm', messages: [{ role: 'user', content: 'q' }], return_token_ids: true });
    expect(chatDialect.renderResponse(reply(3), vllm)).toHaveProperty('policy_version', 3);
  });

  it('refuses a reply whose policy_version is not a non-negative integer, naming the field', async () => {
    const good = chatDialect.renderResponse(
      reply(),
      chatDialect.parseRequest({ model: 'm', messages: [{ role: 'user', content: 'q' }], return_token_ids: true }),
    ) as Record<string, unknown>;
    const baseUrl = await policyServer(() => ({ ...good, policy_version: 'v2' }));
    const client = new OpenAICompatibleClient({ baseUrl, apiKey: 'k', model: 'policy', retry: { maxRetries: 0 } });
    await expect(client.complete({ model: 'policy', messages: [{ role: 'user', content: 'q' }], sampling: {} })).rejects.toThrow(
      /policy_version/,
    );
  });
});
