import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { type InterceptedRollout, startInterceptedRollout } from '../../testing/intercepted-rollout.ts';

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function start(options: Parameters<typeof startInterceptedRollout>[0]) {
  rollout = await startInterceptedRollout(options);
  // The Anthropic SDK appends /v1/messages to the base URL, as Claude Code does.
  const program = new Anthropic({ baseURL: rollout.interception.url, apiKey: rollout.session.secret, maxRetries: 0 });
  return { rollout, program };
}

const bashTool = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: { type: 'object' as const, properties: { command: { type: 'string' } }, required: ['command'] },
};

/** Reads a raw SSE body into `[event, data]` pairs. */
function sseEvents(text: string): { event: string | null; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.trim())
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1] ?? null;
      const data = /^data: (.*)$/m.exec(frame)?.[1] ?? '{}';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

describe('Anthropic messages dialect through interception', () => {
  it('answers a non-streaming message with stop_reason and usage, imposing the run model', async () => {
    const { rollout, program } = await start({
      script: [{ content: 'Hello there.', usage: { promptTokens: 20, completionTokens: 3, cachedInputTokens: 5 } }],
      runModel: 'policy-7b',
      sampling: { temperature: 0.7 },
    });
    // A program temperature (older SDKs and other programs send one) must not reach the model.
    const body = {
      model: 'claude-opus-4-8',
      max_tokens: 32000,
      temperature: 0,
      system: [{ type: 'text' as const, text: 'You are Claude Code.', cache_control: { type: 'ephemeral' as const } }],
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    const reply = await program.messages.create(body as Anthropic.MessageCreateParamsNonStreaming, { timeout: 60_000 });
    expect(reply.content).toEqual([{ type: 'text', text: 'Hello there.' }]);
    expect(reply.stop_reason).toBe('end_turn');
    expect(reply.usage).toMatchObject({ input_tokens: 20, output_tokens: 3, cache_read_input_tokens: 5 });
    expect(reply.model).toBe('policy-7b');
    // The program's temperature is dropped, the run's wins; max_tokens is mapped.
    const seen = rollout.model.requests[0]?.body as Record<string, unknown>;
    expect(seen.model).toBe('policy-7b');
    expect(seen.temperature).toBe(0.7);
    expect(seen.max_tokens).toBe(32000);
    expect(rollout.trace.calls[0]?.dialect).toBe('messages');
    expect(rollout.trace.messages[0]).toEqual({ role: 'system', content: 'You are Claude Code.' });
  });

  it('streams the real event sequence: message_start, text and tool_use blocks, message_delta, message_stop', async () => {
    const { rollout } = await start({
      script: [
        {
          content: 'Creating the file.',
          reasoning: 'I should use Bash.',
          toolCalls: [{ id: 'toolu_01', name: 'Bash', arguments: '{"command":"echo hello > probe.txt"}' }],
        },
      ],
    });
    const response = await fetch(`${rollout.interception.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': rollout.session.secret, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 1024,
        stream: true,
        tools: [bashTool],
        messages: [{ role: 'user', content: 'create probe file' }],
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = sseEvents(await response.text());
    for (const { event, data } of events) expect(event).toBe(data.type);
    const types = events.map((e) => e.data.type);
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const starts = events
      .filter((e) => e.data.type === 'content_block_start')
      .map((e) => (e.data.content_block as { type: string }).type);
    expect(starts).toEqual(['thinking', 'text', 'tool_use']);
    expect(types.filter((t) => t === 'content_block_stop')).toHaveLength(3);
    const json = events
      .filter((e) => (e.data.delta as { type?: string } | undefined)?.type === 'input_json_delta')
      .map((e) => (e.data.delta as { partial_json: string }).partial_json)
      .join('');
    expect(json).toBe('{"command":"echo hello > probe.txt"}');
    const delta = events.find((e) => e.data.type === 'message_delta')?.data;
    expect(delta?.delta).toMatchObject({ stop_reason: 'tool_use' });
  });

  it('is accumulated by the Anthropic SDK stream into the same message as the non-streaming reply', async () => {
    const { program } = await start({
      script: [
        {
          content: 'Creating the file.',
          reasoning: 'Think first.',
          toolCalls: [{ id: 'toolu_01', name: 'Bash', arguments: '{"command":"ls"}' }],
        },
      ],
    });
    const message = await program.messages
      .stream({ model: 'm', max_tokens: 1024, tools: [bashTool], messages: [{ role: 'user', content: 'go' }] })
      .finalMessage();
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Think first.', signature: '' },
      { type: 'text', text: 'Creating the file.' },
      { type: 'tool_use', id: 'toolu_01', name: 'Bash', input: { command: 'ls' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
  });

  it('round-trips a tool call and its result exactly, with a mid-conversation system message', async () => {
    const { rollout, program } = await start({
      script: [{ toolCalls: [{ id: 'toolu_A1', name: 'Bash', arguments: '{"command":"echo hello > probe.txt"}' }] }, 'done'],
    });
    const first = await program.messages.create({
      model: 'm',
      max_tokens: 1024,
      tools: [bashTool],
      system: 'You are an agent.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'create probe file' }] },
        { role: 'system', content: 'Available skills: none.' } as unknown as Anthropic.MessageParam,
      ],
    });
    const toolUse = first.content.find((block) => block.type === 'tool_use');
    expect(toolUse).toEqual({ type: 'tool_use', id: 'toolu_A1', name: 'Bash', input: { command: 'echo hello > probe.txt' } });
    // Claude Code's next turn: the system message mid-conversation again, the assistant content echoed, the tool_result.
    const body = {
      model: 'm',
      max_tokens: 1024,
      stream: true,
      tools: [bashTool],
      system: 'You are an agent.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'create probe file' }] },
        { role: 'system', content: 'Available skills: none.' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_A1',
              content: '(Bash completed with no output)',
              is_error: false,
              cache_control: { type: 'ephemeral' },
            },
          ],
        },
      ],
    };
    const response = await fetch(`${rollout.interception.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${rollout.session.secret}` },
      body: JSON.stringify(body),
    });
    const text = sseEvents(await response.text())
      .filter((e) => (e.data.delta as { type?: string } | undefined)?.type === 'text_delta')
      .map((e) => (e.data.delta as { text: string }).text)
      .join('');
    expect(text).toBe('done');
    expect(rollout.model.requests[1]?.request?.messages).toEqual([
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: [{ type: 'text', text: 'create probe file' }] },
      { role: 'system', content: 'Available skills: none.' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'toolu_A1', name: 'Bash', arguments: '{"command":"echo hello > probe.txt"}' }],
      },
      { role: 'tool', toolCallId: 'toolu_A1', content: '(Bash completed with no output)' },
    ]);
    // The re-sent assistant turn is recognised as the sampled node: one branch, two sampled turns.
    expect(rollout.trace.branches).toHaveLength(1);
    expect(rollout.trace.numTurns).toBe(2);
    const sampledCall = rollout.trace.node(rollout.trace.calls[0]!.node!);
    expect(rollout.trace.path(rollout.trace.calls[1]!.node!)).toContain(sampledCall.id);
  });

  it('keeps token ids and logprobs on the trace when an Anthropic-speaking program runs against a vLLM-shaped model', async () => {
    const { rollout, program } = await start({
      script: [{ toolCalls: [{ id: 'toolu_T', name: 'Bash', arguments: '{"command":"ls"}' }] }, 'All done.'],
      vllmTokens: true,
    });
    const first = await program.messages.create({
      model: 'm',
      max_tokens: 100,
      tools: [bashTool],
      messages: [{ role: 'user', content: 'look' }],
    });
    await program.messages
      .stream({
        model: 'm',
        max_tokens: 100,
        tools: [bashTool],
        messages: [
          { role: 'user', content: 'look' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_T', content: 'a.txt' }] },
        ],
      })
      .finalMessage();
    const [a, b] = rollout.trace.calls.map((call) => rollout.trace.node(call.node!));
    expect(a?.tokenIds?.length).toBeGreaterThan(0);
    expect(a?.logprobs).toHaveLength(a!.mask!.filter(Boolean).length);
    // The second turn's prompt extends the first turn's prompt + completion: one token sequence.
    expect(b?.tokenParent).toBe(a?.id);
    expect(b?.mask?.filter(Boolean).length).toBeGreaterThan(0);
  });

  it('answers count_tokens with an estimate and lists the session model', async () => {
    const { rollout } = await start({ script: [], runModel: 'policy-7b' });
    const count = await fetch(`${rollout.interception.url}/v1/messages/count_tokens?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': rollout.session.secret },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a fairly long question about many things' }] }),
    });
    expect(count.status).toBe(200);
    expect(((await count.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(5);
    const models = await fetch(`${rollout.baseUrl}/models`, { headers: { 'x-api-key': rollout.session.secret } });
    expect(((await models.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['policy-7b']);
    expect(rollout.trace.calls).toHaveLength(0);
  });

  it('answers errors in the Anthropic error shape', async () => {
    const { rollout } = await start({ script: [] });
    const response = await fetch(`${rollout.interception.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': rollout.session.secret },
      body: JSON.stringify({ model: 'm', max_tokens: 'many', messages: [] }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('max_tokens');
  });
});
