import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { type InterceptedRollout, startInterceptedRollout } from '../testing/intercepted-rollout.ts';
import { InterceptionServer } from './interception-server.ts';
import { RolloutSession } from './rollout-session.ts';

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function start(options: Parameters<typeof startInterceptedRollout>[0]) {
  rollout = await startInterceptedRollout(options);
  return rollout;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const chatBody = (content = 'hi') => ({ model: 'm', messages: [{ role: 'user', content }] });

describe('InterceptionServer', () => {
  it('listens on 127.0.0.1 only', async () => {
    const r = await start({ script: [] });
    expect(r.interception.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(r.interception.url).port);
    // Another loopback address on the same port is refused: the socket is bound to 127.0.0.1 alone.
    const refused = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.2', port }, () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('answers 401 to an unknown or missing secret, in the dialect error shape', async () => {
    const r = await start({ script: ['never'] });
    const wrong = await post(`${r.baseUrl}/chat/completions`, chatBody(), { authorization: 'Bearer rs-not-the-secret' });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const missing = await post(`${r.baseUrl}/messages`, { model: 'm', max_tokens: 5, messages: [] });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(r.model.calls).toBe(0);
  });

  it('accepts the secret as Bearer token or x-api-key, and any path prefix or query string', async () => {
    const r = await start({ script: () => 'ok' });
    const bearer = await post(`${r.baseUrl}/chat/completions`, chatBody('a'), { authorization: `Bearer ${r.session.secret}` });
    const apiKey = await post(`${r.interception.url}/run/abc/v1/chat/completions?beta=true`, chatBody('b'), {
      'x-api-key': r.session.secret,
    });
    expect([bearer.status, apiKey.status]).toEqual([200, 200]);
  });

  it('answers 409 after the session is unregistered or concluded', async () => {
    const r = await start({ script: () => 'ok' });
    const auth = { authorization: `Bearer ${r.session.secret}` };
    expect((await post(`${r.baseUrl}/chat/completions`, chatBody(), auth)).status).toBe(200);
    r.session.conclude('agent_completed');
    const concluded = await post(`${r.baseUrl}/chat/completions`, chatBody(), auth);
    expect(concluded.status).toBe(409);
    expect(concluded.headers.get('x-should-retry')).toBe('false');
    r.interception.unregister(r.session);
    const gone = await post(`${r.baseUrl}/responses`, { model: 'm', input: 'x' }, auth);
    expect(gone.status).toBe(409);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toMatch(/ended/);
    expect(r.model.calls).toBe(1);
  });

  it('on one keep-alive connection, checks every secret anew and ends an unregistered one', async () => {
    const r = await start({ script: () => 'ok' });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const client = new OpenAICompatibleClient({ baseUrl: r.model.baseUrl, apiKey: 'k', model: 'm' });
    const other = new RolloutSession({ trace: r.trace, client, model: 'm' });
    r.interception.register(other);
    const call = (secret: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const body = JSON.stringify(chatBody());
        const req = httpRequest(`${r.baseUrl}/chat/completions`, {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      const secret = r.session.secret;
      const near = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
      const outcomes = [await call(secret), await call(near), await call(secret), await call(other.secret)];
      r.interception.unregister(r.session);
      outcomes.push(await call(secret), await call(other.secret));
      expect(outcomes.map((o) => o.status)).toEqual([200, 401, 200, 200, 409, 200]);
      expect(outcomes.slice(1).every((o) => o.reused)).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('remembers only a bounded number of ended secrets (older ones fall back to 401)', async () => {
    const server = new InterceptionServer({ tombstones: 2 });
    await server.start();
    try {
      const r = await start({ script: [] });
      const unused = { model: 'm', complete: () => Promise.reject(new Error('not called')) };
      const sessions = [0, 1, 2].map(() => new RolloutSession({ trace: r.trace, client: unused, model: 'm' }));
      for (const session of sessions) {
        server.register(session);
        server.unregister(session);
      }
      const status = async (session: RolloutSession) =>
        (await post(`${server.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${session.secret}` })).status;
      expect(await status(sessions[0]!)).toBe(401);
      expect(await status(sessions[2]!)).toBe(409);
    } finally {
      await server.close();
    }
  });

  it('stops the rollout with 400 "rollout stopped: max_turns" when the turn limit is reached', async () => {
    const r = await start({ script: () => 'ok', limits: { maxTurns: 1 } });
    const program = new OpenAI({ baseURL: r.baseUrl, apiKey: r.session.secret, maxRetries: 0 });
    await program.chat.completions.create(chatBody('one') as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const error = await program.chat.completions
      .create({ ...chatBody('two'), stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain('rollout stopped: max_turns');
    expect(r.trace.stopCondition).toBe('max_turns');
    expect(r.model.calls).toBe(1);
  });

  it('does not sample twice for an SDK retry of an identical request (x-stainless-retry-count)', async () => {
    const r = await start({ script: () => ({ content: `sample ${Math.random()}` }) });
    const auth = { authorization: `Bearer ${r.session.secret}` };
    const first = (await (await post(`${r.baseUrl}/chat/completions`, chatBody('same'), auth)).json()) as OpenAI.ChatCompletion;
    const retry = await post(`${r.baseUrl}/chat/completions`, chatBody('same'), { ...auth, 'x-stainless-retry-count': '1' });
    const second = (await retry.json()) as OpenAI.ChatCompletion;
    expect(second.choices[0]?.message.content).toBe(first.choices[0]?.message.content);
    expect(r.model.calls).toBe(1);
    expect(r.trace.calls).toHaveLength(1);
    // Without the header, the same body is a new sample.
    await post(`${r.baseUrl}/chat/completions`, chatBody('same'), auth);
    expect(r.model.calls).toBe(2);
  });

  it('answers malformed bodies with 4xx JSON naming the problem', async () => {
    const r = await start({ script: [] });
    const auth = { authorization: `Bearer ${r.session.secret}` };
    const notJson = await post(`${r.baseUrl}/chat/completions`, '{"model": "m", "messages": [', auth);
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { message: string } }).error.message).toMatch(/not valid JSON/);
    const wrongType = await post(
      `${r.baseUrl}/chat/completions`,
      { model: 'm', messages: [{ role: 'user', content: 42 }] },
      auth,
    );
    expect(wrongType.status).toBe(400);
    const wrongBody = (await wrongType.json()) as { error: { message: string; param: string } };
    expect(wrongBody.error.param).toBe('messages.0.content');
    const empty = await post(`${r.baseUrl}/responses`, '', auth);
    expect(empty.status).toBe(400);
    const badRole = await post(
      `${r.baseUrl}/messages`,
      { model: 'm', max_tokens: 5, messages: [{ role: 'robot', content: 'x' }] },
      auth,
    );
    expect(badRole.status).toBe(400);
    expect(((await badRole.json()) as { error: { message: string } }).error.message).toContain('messages.0.role');
    const unknown = await post(`${r.baseUrl}/embeddings`, { input: 'x' }, auth);
    expect(unknown.status).toBe(404);
    expect(r.model.calls).toBe(0);
  });

  it('refuses a body over the size limit with 413', async () => {
    const r = await start({ script: [], interception: { maxBodyBytes: 2048 } });
    const response = await post(`${r.baseUrl}/chat/completions`, chatBody('x'.repeat(5000)), {
      authorization: `Bearer ${r.session.secret}`,
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('request_too_large');
  });

  it('relays a provider error with its status and records the failed call on the trace', async () => {
    const r = await start({ script: [{ error: { status: 429, message: 'slow down' } }], client: { retry: { maxRetries: 0 } } });
    const response = await post(`${r.baseUrl}/chat/completions`, chatBody(), { authorization: `Bearer ${r.session.secret}` });
    expect(response.status).toBe(429);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('slow down');
    expect(r.trace.calls).toHaveLength(1);
    expect(r.trace.calls[0]?.error).toMatchObject({ type: 'ProviderError', statusCode: 429 });
    expect(r.session.providerError?.statusCode).toBe(429);
  });

  it('keeps a slow stream alive with heartbeats, then delivers the reply', async () => {
    const r = await start({ script: () => 'slow but fine', latencyMs: 150, interception: { heartbeatMs: 25 } });
    const raw = await post(
      `${r.baseUrl}/chat/completions`,
      { ...chatBody(), stream: true },
      { authorization: `Bearer ${r.session.secret}` },
    );
    const text = await raw.text();
    expect(text.startsWith(': keep-alive\n\n')).toBe(true);
    expect(text).toContain('slow but fine');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    // The Anthropic stream uses real ping events for the same purpose.
    const messages = await post(
      `${r.baseUrl}/messages`,
      { model: 'm', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] },
      { 'x-api-key': r.session.secret },
    );
    const events = await messages.text();
    expect(events.startsWith('event: ping\n')).toBe(true);
    expect(events).toContain('event: message_stop');
  });

  it('reports a provider failure inside a stream that already started', async () => {
    const r = await start({
      script: [{ error: { status: 500, message: 'gpu fell over' } }],
      latencyMs: 150,
      interception: { heartbeatMs: 25 },
      client: { retry: { maxRetries: 0 } },
    });
    const program = new OpenAI({ baseURL: r.baseUrl, apiKey: r.session.secret, maxRetries: 0 });
    const stream = await program.chat.completions.create({
      ...chatBody(),
      stream: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const error = await (async () => {
      for await (const _ of stream) {
        // drain
      }
    })().then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as Error).message).toContain('gpu fell over');
  });
});
