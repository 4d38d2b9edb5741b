import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../errors/troupe-error.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';
import { NotJsonReplyError, postJson } from './json-post.ts';
import { OpenAICompatibleClient } from './openai-client.ts';

let server: Server | undefined;
let scripted: ScriptedClient | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  await scripted?.close();
  scripted = undefined;
});

/** A server answering every request with `answer(body)`; `null` holds the request open. */
async function serve(answer: (body: string) => { status: number; headers?: Record<string, string>; text: string } | null) {
  const bodies: { headers: Record<string, unknown>; body: string }[] = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push({ headers: req.headers, body });
      const reply = answer(body);
      if (!reply) return;
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.text);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`), bodies };
}

const options = { headers: { 'content-type': 'application/json', authorization: 'Bearer k', 'x-extra': 'e' }, timeoutMs: 5000 };

describe('postJson (the lean transport of OpenAICompatibleClient)', () => {
  it('posts the body with the given headers and parses the JSON reply', async () => {
    const { url, bodies } = await serve((body) => ({ status: 200, text: JSON.stringify({ echo: JSON.parse(body) }) }));
    // 15 characters, 16 bytes: the length is counted in bytes.
    await expect(postJson(url, JSON.stringify({ a: 1, s: 'é' }), options)).resolves.toEqual({ echo: { a: 1, s: 'é' } });
    expect(bodies[0]?.headers).toMatchObject({ authorization: 'Bearer k', 'x-extra': 'e', 'content-length': '16' });
  });

  it('throws the SDK error class of the status, with the body error and the reply headers', async () => {
    const { url } = await serve(() => ({
      status: 429,
      headers: { 'retry-after': '7' },
      text: JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }),
    }));
    const error = await postJson(url, '{}', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toBe('429 slow down');
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('7');
  });

  it('keeps a non-JSON error body as the message, and refuses a 2xx body that is not JSON', async () => {
    let status = 502;
    const { url } = await serve(() => ({ status, text: 'bad gateway' }));
    const error = await postJson(url, '{}', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as Error).message).toBe('502 bad gateway');
    status = 200;
    await expect(postJson(url, '{}', options)).rejects.toBeInstanceOf(NotJsonReplyError);
  });

  it('times out with APIConnectionTimeoutError and aborts with APIUserAbortError', async () => {
    const { url } = await serve(() => null);
    await expect(postJson(url, '{}', { ...options, timeoutMs: 50 })).rejects.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    const controller = new AbortController();
    const pending = postJson(url, '{}', { ...options, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    const aborted = new AbortController();
    aborted.abort();
    await expect(postJson(url, '{}', { ...options, signal: aborted.signal })).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
  });

  it('fails a refused connection with APIConnectionError', async () => {
    const { url } = await serve(() => null);
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const error = await postJson(url, '{}', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionError);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
  });

  it('OpenAICompatibleClient: a timed-out attempt is retried, then fails as a ProviderError after the budget', async () => {
    const { url, bodies } = await serve(() => null);
    const client = new OpenAICompatibleClient({
      baseUrl: url.href.replace('/chat/completions', ''),
      apiKey: 'k',
      model: 'm',
      timeoutMs: 30,
      retry: { maxRetries: 1, baseDelayMs: 1 },
    });
    const error = await client.complete({ model: 'm', messages: [{ role: 'user', content: 'q' }], sampling: {} }).catch((e) => e);
    expect(ProviderError.is(error)).toBe(true);
    expect((error as ProviderError).statusCode).toBe(502);
    expect((error as Error).message).toMatch(/timed out.*after 2 attempts/);
    expect(bodies).toHaveLength(2);
  });

  it('OpenAICompatibleClient: an injected fetch is used (the SDK path), the default needs none', async () => {
    scripted = await scriptedClient({ script: ['one', 'two'] });
    let fetched = 0;
    const client = new OpenAICompatibleClient({
      baseUrl: scripted.server.baseUrl,
      apiKey: 'k',
      model: 'm',
      fetch: (input, init) => {
        fetched++;
        return fetch(input, init);
      },
    });
    const first = await client.complete({ model: 'm', messages: [{ role: 'user', content: 'q' }], sampling: {} });
    expect(first.message.content).toBe('one');
    expect(fetched).toBe(1);
    const second = await scripted.client.complete({ model: 'm', messages: [{ role: 'user', content: 'q' }], sampling: {} });
    expect(second.message.content).toBe('two');
  });
});
