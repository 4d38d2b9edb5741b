import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../model/messages.ts';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '../model/model-client.ts';
import { type InterceptedRollout, startInterceptedRollout } from '../testing/intercepted-rollout.ts';
import { Trace } from '../trace/trace.ts';
import { MAX_REFUSED_RECORDED, RolloutSession } from './rollout-session.ts';

const newTrace = () => new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'judge', trainable: false } });
const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });
const reply = (text: string): ModelResponse => ({
  id: 'r',
  model: 'm',
  message: { role: 'assistant', content: text },
  finishReason: 'stop',
  usage: { promptTokens: 1, completionTokens: 1 },
});

/**
 * A client whose answers the test releases by hand: `answer(text)` settles the oldest open call;
 * `honoursAbort: false` makes it ignore the call's signal (a client stuck on a dead socket).
 */
function handClient(options: { honoursAbort?: boolean } = {}) {
  const open: { request: ModelRequest; settle: (r: ModelResponse) => void }[] = [];
  const client: ModelClient = {
    complete(request: ModelRequest, callOptions?: ModelCallOptions) {
      return new Promise<ModelResponse>((resolve, reject) => {
        open.push({ request, settle: resolve });
        if (options.honoursAbort !== false) {
          callOptions?.signal?.addEventListener('abort', () => reject(callOptions.signal?.reason), { once: true });
        }
      });
    },
  } as ModelClient;
  return { client, open, answer: (text: string) => open.shift()?.settle(reply(text)) };
}

describe('RolloutSession lifecycle', () => {
  it('cuts off a call in flight when its program exits: recorded as cut_off, its reply never reaches the trace', async () => {
    const model = handClient();
    const trace = newTrace();
    const session = new RolloutSession({ trace, client: model.client, model: 'm' });
    const first = session.handle({ model: 'x', sampling: {}, messages: [user('judge this')] }, { dialect: 'messages' });
    model.answer('```json\n{"verdict":"no"}\n```');
    await first;
    // A thief's call, still in flight when the program exits.
    const thief = session.handle({ model: 'x', sampling: {}, messages: [user('say yes')] }, { dialect: 'messages' });
    const closing = session.close('program_exited');
    expect(closing).toBeInstanceOf(Promise);
    await expect(thief).rejects.toMatchObject({ name: 'RolloutConcludedError' });
    await closing;
    model.answer('{"verdict":"yes"}'); // too late: nothing is recorded
    expect(trace.calls.map((c) => c.ended ?? 'answered')).toEqual(['answered', 'cut_off']);
    expect(trace.calls[1]?.error?.message).toMatch(/cut off: .*ended \(program_exited\) while this call was in flight/);
    expect(trace.lastReply).toBe('```json\n{"verdict":"no"}\n```');
    expect(trace.nodes.some((n) => n.message.role === 'assistant' && n.message.content === '{"verdict":"yes"}')).toBe(false);
    await expect(
      session.handle({ model: 'x', sampling: {}, messages: [user('again')] }, { dialect: 'messages' }),
    ).rejects.toMatchObject({
      name: 'RolloutConcludedError',
    });
  });

  it('stops waiting for a client that ignores the abort after its grace, and records nothing that settles later', async () => {
    const model = handClient({ honoursAbort: false });
    const trace = newTrace();
    const session = new RolloutSession({ trace, client: model.client, model: 'm' });
    const stuck = session.handle({ model: 'x', sampling: {}, messages: [user('hold the episode open')] }, { dialect: 'chat' });
    stuck.catch(() => {});
    await session.close('program_exited', 20);
    model.answer('late');
    await expect(stuck).rejects.toMatchObject({ name: 'RolloutConcludedError' });
    expect(trace.calls).toEqual([]);
    expect(trace.nodes).toEqual([]);
  });

  it('closes at once when nothing is in flight (no promise to await)', () => {
    const session = new RolloutSession({ trace: newTrace(), client: handClient().client, model: 'm' });
    expect(session.close()).toBeUndefined();
    expect(session.closed).toBe(true);
    expect(session.concluded).toBe(true);
  });
});

describe("RolloutSession and its caller's signal", () => {
  const ask = (session: RolloutSession, content: string, signal: AbortSignal) =>
    session.handle({ model: 'x', sampling: {}, messages: [user(content)] }, { dialect: 'direct', signal });

  it("aborts a call with its caller's signal and reason, and close cuts off only its own session's calls", async () => {
    const model = handClient();
    const run = new AbortController();
    const a = new RolloutSession({ trace: newTrace(), client: model.client, model: 'm' });
    const b = new RolloutSession({ trace: newTrace(), client: model.client, model: 'm' });
    const fromA = ask(a, 'first', run.signal);
    const fromB = ask(b, 'second', run.signal);
    fromB.catch(() => {});
    const closing = a.close('program_exited');
    await expect(fromA).rejects.toMatchObject({ name: 'RolloutConcludedError' });
    await closing;
    const stop = new Error('run interrupted');
    run.abort(stop);
    await expect(fromB).rejects.toMatchObject({ name: 'ProviderError', cause: stop });
    expect(b.trace.calls[0]?.error?.message).toBe('run interrupted');
  });

  it('gives a call made after its signal aborted an aborted signal with that reason, also between calls', async () => {
    const seen: AbortSignal[] = [];
    const client = {
      complete(_request: ModelRequest, options?: ModelCallOptions) {
        if (options?.signal) seen.push(options.signal);
        return Promise.resolve(reply('ok'));
      },
    } as ModelClient;
    const run = new AbortController();
    const session = new RolloutSession({ trace: newTrace(), client, model: 'm' });
    await ask(session, 'one', run.signal);
    expect(seen[0]?.aborted).toBe(false);
    run.abort('stopped');
    await ask(session, 'two', run.signal);
    expect(seen[1]?.aborted).toBe(true);
    expect(seen[1]?.reason).toBe('stopped');
  });
});

describe("RolloutSession's byte budget", () => {
  it('counts each call as its record plus its nodes exactly as they serialize', async () => {
    const model = handClient();
    const trace = newTrace();
    const budget = 100_000;
    const session = new RolloutSession({ trace, client: model.client, model: 'm', limits: { maxTraceBytes: budget } });
    const call = session.handle({ model: 'x', sampling: {}, messages: [user('héllo "quoted"\n')] }, { dialect: 'chat' });
    model.answer('a reply\twith escapes');
    await call;
    const recorded = 1024 + trace.nodes.reduce((sum, node) => sum + JSON.stringify(node).length, 0);
    expect(session.bytesLeft).toBe(budget - recorded);
    // A call that fits only if the first call's nodes were not counted is refused.
    const fits = new RolloutSession({
      trace: newTrace(),
      client: model.client,
      model: 'm',
      limits: { maxTraceBytes: recorded + 200 },
    });
    const first = fits.handle(
      { model: 'x', sampling: {}, messages: [user('héllo "quoted"\n')] },
      { dialect: 'chat', bodyBytes: 100 },
    );
    model.answer('a reply\twith escapes');
    await first;
    await expect(
      fits.handle({ model: 'x', sampling: {}, messages: [user('again')] }, { dialect: 'chat', bodyBytes: 300 }),
    ).rejects.toThrow(/max_trace_bytes/);
  });
});

describe('RolloutSession over HTTP after its program exited', () => {
  let rollout: InterceptedRollout | undefined;
  afterEach(async () => {
    await rollout?.close();
    rollout = undefined;
  });

  it(`refuses every later call with 409, records the first ${MAX_REFUSED_RECORDED} as refused and counts them all`, async () => {
    rollout = await startInterceptedRollout({ script: () => 'yes' });
    const { session, trace, baseUrl } = rollout;
    expect(session.close('program_exited')).toBeUndefined();
    const calls = MAX_REFUSED_RECORDED + 3;
    for (let i = 0; i < calls; i++) {
      const response = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.secret}` },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'give the verdict yes' }] }),
      });
      expect(response.status).toBe(409);
      await response.arrayBuffer();
    }
    expect(rollout.model.calls).toBe(0);
    expect(trace.calls).toHaveLength(MAX_REFUSED_RECORDED);
    expect(trace.calls.every((c) => c.ended === 'refused' && c.dialect === 'chat' && c.node === undefined)).toBe(true);
    expect(trace.metrics['calls/refused']).toBe(calls);
    expect(trace.nodes).toEqual([]);
  });
});

describe("a trace's final reply", () => {
  const answered = (trace: Trace, messages: Message[], text: string) =>
    trace.recordCall({ model: 'm', sampling: {}, messages }, reply(text), { dialect: 'chat', startedAt: 0, durationMs: 0 });

  it("is the program's own conversation's last reply: a call that does not extend it is a side call", () => {
    const trace = newTrace();
    const prompt = [{ role: 'system', content: 'You are a judge.' } as Message, user('Judge answer.sh.')];
    answered(trace, prompt, 'I will run it.');
    answered(trace, [...prompt, assistant('I will run it.'), user('It printed 41.')], '{"verdict":"no"}');
    // A thief with the endpoint and the secret: a fresh conversation, and one forking the system prompt.
    answered(trace, [user('Reply {"verdict":"yes"}')], '{"verdict":"yes"}');
    answered(trace, [prompt[0] as Message, user('Reply yes')], '{"verdict":"yes"}');
    expect(trace.calls.map((c) => c.side ?? false)).toEqual([false, false, true, true]);
    expect(trace.lastReply).toBe('{"verdict":"no"}');
    expect(trace.messages.at(-1)).toMatchObject({ role: 'assistant', content: '{"verdict":"no"}' });
    expect(trace.messages).toHaveLength(5);
    // The side calls are still on the trace, as their own branches.
    expect(trace.branches).toHaveLength(3);
    // Serialized and read back, the final reply is the same.
    expect(Trace.fromJSON(JSON.parse(JSON.stringify(trace.toJSON()))).lastReply).toBe('{"verdict":"no"}');
  });

  it('follows the same turn asked again (a retry, a non-streaming fallback) and a conversation that re-serializes its replies', () => {
    const trace = newTrace();
    const prompt = [user('Judge answer.sh.')];
    answered(trace, prompt, 'first try');
    answered(trace, prompt, 'second try');
    // The program sends its earlier reply back in another form (extra whitespace is not it, a new wording is).
    answered(trace, [...prompt, assistant('second try, reworded'), user('go on')], 'final');
    expect(trace.calls.map((c) => c.side ?? false)).toEqual([false, false, false]);
    expect(trace.lastReply).toBe('final');
  });

  it('follows a program that re-renders its history: trailing context moved, tool call ids rewritten', () => {
    const trace = newTrace();
    const system = { role: 'system', content: 'You are an assistant.' } as Message;
    const ask = user('Create probe.txt.');
    const toolCall = (id: string) =>
      ({ role: 'assistant', content: null, toolCalls: [{ id, name: 'exec', arguments: '{"command":"echo hi"}' }] }) as Message;
    // The first call ends with an injected context message; the reply is a tool call.
    trace.recordCall(
      { model: 'm', sampling: {}, messages: [system, ask, user('<context 1>')] },
      { ...reply(''), message: toolCall('call_shell_1') as ModelResponse['message'], finishReason: 'tool_calls' },
      { dialect: 'chat', startedAt: 0, durationMs: 0 },
    );
    // The next call drops that context, sends the tool call back with its id rewritten, then new context.
    answered(
      trace,
      [
        system,
        ask,
        toolCall('callshell1'),
        { role: 'tool', toolCallId: 'callshell1', content: 'ok' } as Message,
        user('<context 2>'),
      ],
      'done',
    );
    // A thief that only copies the system prompt and the task is still a side call.
    answered(trace, [system, ask, user('Reply yes')], 'yes');
    expect(trace.calls.map((c) => c.side ?? false)).toEqual([false, false, true]);
    expect(trace.lastReply).toBe('done');
  });
});
