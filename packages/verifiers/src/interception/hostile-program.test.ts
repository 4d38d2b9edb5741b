import { afterEach, describe, expect, it } from 'vitest';
import { LimitError, ProviderError } from '../errors/troupe-error.ts';
import type { ModelRequest } from '../model/model-client.ts';
import { type InterceptedRollout, startInterceptedRollout } from '../testing/intercepted-rollout.ts';
import { scriptedClient } from '../testing/scripted-model-server.ts';
import { Trace } from '../trace/trace.ts';
import { InterceptionServer } from './interception-server.ts';
import { RolloutSession } from './rollout-session.ts';

// Programs are hostile: these are the reproducers of what one sandboxed program could do to a run
// (call concurrently past a limit, record more than a line can hold, send nesting past the stack).

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function start(options: Parameters<typeof startInterceptedRollout>[0]) {
  rollout = await startInterceptedRollout(options);
  return rollout;
}

function chat(r: InterceptedRollout, content: string, secret = r.session.secret) {
  return fetch(`${r.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
  });
}

/** A JSON value nesting `depth` arrays, as text (the body no parser would build by recursion). */
function deepArray(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

describe('a rollout under concurrent calls', () => {
  it('lets exactly maxTurns of 50 concurrent calls reach the model, refusing the rest with max_turns', async () => {
    const r = await start({ script: () => 'ok', latencyMs: 30, limits: { maxTurns: 2 } });
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => chat(r, `call ${i}`).then((res) => res.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 400)).toHaveLength(48);
    expect(r.model.calls).toBe(2);
    expect(r.trace.numTurns).toBe(2);
    expect(r.trace.stopCondition).toBe('max_turns');
  });

  it('checks a token limit against every earlier call: concurrent calls pass it no more than sequential ones', async () => {
    const r = await start({
      script: () => ({ content: 'ok', usage: { promptTokens: 10, completionTokens: 10 } }),
      latencyMs: 20,
      limits: { maxTotalTokens: 25 },
    });
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(r, `call ${i}`).then((res) => res.status)));
    // 0 then 20 tokens used are under 25; the third call sees 40 and is refused, as are the rest.
    expect(r.model.calls).toBe(2);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(r.trace.stopCondition).toBe('max_total_tokens');
  });
});

describe("a rollout's byte budget", () => {
  it('stops a program making distinct large calls with max_trace_bytes; what it recorded stays under the budget', async () => {
    const budget = 1024 * 1024;
    const r = await start({ script: () => 'ok', limits: { maxTraceBytes: budget } });
    const statuses: number[] = [];
    // 20 distinct calls of 200 KB: the CI-size form of 20 calls of 30 MiB against 64 MiB.
    for (let i = 0; i < 20; i++) statuses.push((await chat(r, `${i}:${'x'.repeat(200_000)}`)).status);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses.slice(5)).toEqual(Array(15).fill(400));
    expect(r.trace.stopCondition).toBe('max_trace_bytes');
    expect(JSON.stringify(r.trace).length).toBeLessThan(budget);
    const refused = await chat(r, 'small');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('max_trace_bytes');
  });

  it('counts calls in flight: 10 concurrent large calls reach the model only as far as the budget holds them', async () => {
    const r = await start({ script: () => 'ok', latencyMs: 50, limits: { maxTraceBytes: 1024 * 1024 } });
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => chat(r, `${i}:${'y'.repeat(300_000)}`).then((res) => res.status)),
    );
    expect(r.model.calls).toBe(3);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(r.trace.stopCondition).toBe('max_trace_bytes');
  });

  it('refuses, unread, a body larger than what is left of the budget', async () => {
    const r = await start({ script: () => 'ok', limits: { maxTraceBytes: 100_000 } });
    const response = await chat(r, 'z'.repeat(200_000));
    expect(response.status).toBe(400);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(r.model.calls).toBe(0);
    expect(r.trace.calls).toHaveLength(0);
    expect(r.trace.stopCondition).toBe('max_trace_bytes');
  });

  it('counts in-process calls too (no body on the wire): the call past the budget is refused', async () => {
    const { client, server } = await scriptedClient({ script: () => 'ok' });
    try {
      const trace = new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
      const session = new RolloutSession({ trace, client, model: 'm', limits: { maxTraceBytes: 500_000 } });
      const call = (i: number) =>
        session.handle(
          { model: 'm', sampling: {}, messages: [{ role: 'user', content: `${i}${'w'.repeat(200_000)}` }] },
          { dialect: 'direct' },
        );
      await call(0);
      await call(1);
      await expect(call(2)).rejects.toThrow(/max_trace_bytes/);
      expect(server.calls).toBe(2);
      expect(trace.stopCondition).toBe('max_trace_bytes');
    } finally {
      await server.close();
    }
  });
});

describe('the process-wide budget of request bodies', () => {
  it('serves 48 concurrent large requests from 48 rollouts by back-pressure, never holding more than its capacity', async () => {
    const { client, server } = await scriptedClient({ script: () => 'ok', latencyMs: 5 });
    const capacity = 1024 * 1024;
    const interception = new InterceptionServer({ maxBodyBytesInFlight: capacity });
    await interception.start();
    try {
      const sessions = Array.from({ length: 48 }, (_, i) => {
        const trace = new Trace({ task: { key: `t${i}`, hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
        const session = new RolloutSession({ trace, client, model: 'm' });
        return { session, baseUrl: interception.register(session).baseUrl };
      });
      const statuses = await Promise.all(
        sessions.map(({ session, baseUrl }, i) =>
          fetch(`${baseUrl}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${session.secret}` },
            body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `${i}:${'b'.repeat(256 * 1024)}` }] }),
          }).then((res) => res.status),
        ),
      );
      expect(statuses).toEqual(Array(48).fill(200));
      const budget = interception.bodyBudget;
      expect(budget.peak).toBeLessThanOrEqual(capacity);
      // 48 bodies of 256 KiB could not all have been read at once: some waited.
      expect(budget.peak).toBeGreaterThan(0);
      expect(budget.inUse).toBe(0);
      expect(budget.waiting).toBe(0);
      expect(server.calls).toBe(48);
    } finally {
      await interception.close();
      await server.close();
    }
  });
});

describe('bodies nesting past the stack', () => {
  it('answers count_tokens 400, never 500, for deeply nested JSON, and estimates a normal body', async () => {
    const r = await start({ script: [] });
    const post = (body: string) =>
      fetch(`${r.baseUrl}/messages/count_tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': r.session.secret },
        body,
      });
    const deep = await post(`{"model":"m","messages":${deepArray(100_000)}}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: { message: string } }).error.message).toMatch(/nests .* more than 256 levels/);
    const normal = await post(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello there' }] }));
    expect(normal.status).toBe(200);
    expect(((await normal.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });

  it('refuses a model call with a deeply nested tool schema with 400 (not retried), the model never called', async () => {
    const r = await start({ script: () => 'ok' });
    let schema = '{"type":"object"}';
    for (let i = 0; i < 400; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${schema}}}]}`;
    const response = await fetch(`${r.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${r.session.secret}` },
      body,
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(r.model.calls).toBe(0);
  });

  it('reports a tool schema that overflows the stack in process as a local LimitError after one attempt, not a provider 502', async () => {
    const { client, server } = await scriptedClient({ script: () => 'ok', client: { retry: { maxRetries: 3, baseDelayMs: 1 } } });
    try {
      let parameters: Record<string, unknown> = { type: 'object' };
      for (let i = 0; i < 20_000; i++) parameters = { type: 'object', properties: { a: parameters } };
      const trace = new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
      const session = new RolloutSession({ trace, client, model: 'm' });
      const request: ModelRequest = {
        model: 'm',
        sampling: {},
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'f', parameters }],
      };
      const error = await session.handle(request, { dialect: 'direct' }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(LimitError.isInstance(error)).toBe(true);
      expect(ProviderError.isInstance(error)).toBe(false);
      expect((error as LimitError).statusCode).toBe(400);
      expect((error as Error).message).toMatch(/nests too deeply/);
      expect(server.calls).toBe(0);
      expect(session.providerError).toBeNull();
    } finally {
      await server.close();
    }
  });
});
