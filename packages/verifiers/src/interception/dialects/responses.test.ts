import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type InterceptedRollout, startInterceptedRollout } from '../../testing/intercepted-rollout.ts';
import { responsesDialect } from './responses.ts';

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function start(options: Parameters<typeof startInterceptedRollout>[0]) {
  rollout = await startInterceptedRollout(options);
  const program = new OpenAI({ baseURL: rollout.baseUrl, apiKey: rollout.session.secret, maxRetries: 0 });
  return { rollout, program };
}

const execTool = {
  type: 'function' as const,
  name: 'exec_command',
  description: 'Run a command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
  strict: false,
};

describe('OpenAI responses dialect through interception', () => {
  it('answers a non-streaming response, dropping the program temperature and mapping max_output_tokens and effort', async () => {
    const { rollout, program } = await start({ script: ['Paris.'], runModel: 'policy-7b' });
    const reply = await program.responses.create({
      model: 'gpt-5.5',
      instructions: 'Answer briefly.',
      input: 'Capital of France?',
      temperature: 1.2,
      max_output_tokens: 256,
      reasoning: { effort: 'low' },
    });
    expect(reply.output_text).toBe('Paris.');
    expect(reply.status).toBe('completed');
    expect(reply.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Paris.' }],
    });
    const seen = rollout.model.requests[0]?.body as Record<string, unknown>;
    expect(seen.model).toBe('policy-7b');
    expect(seen.temperature).toBeUndefined();
    expect(seen.max_tokens).toBe(256);
    expect(seen.reasoning_effort).toBe('low');
    expect(rollout.model.requests[0]?.request?.messages).toEqual([
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Capital of France?' },
    ]);
    expect(rollout.trace.calls[0]?.dialect).toBe('responses');
  });

  it('streams created, output_item.added/done, text and argument deltas, and completed (what Codex needs)', async () => {
    const { program } = await start({
      script: [
        {
          content: 'Running it now.',
          reasoning: 'Need a shell.',
          toolCalls: [{ id: 'call_77', name: 'exec_command', arguments: '{"cmd":"echo hello > probe.txt"}' }],
        },
      ],
    });
    const stream = await program.responses.create({ model: 'm', input: 'create probe file', tools: [execTool], stream: true });
    const types: string[] = [];
    let text = '';
    let args = '';
    const done: OpenAI.Responses.ResponseOutputItem[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.output_item.done') done.push(event.item);
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_item.added');
    expect(text).toBe('Running it now.');
    expect(args).toBe('{"cmd":"echo hello > probe.txt"}');
    expect(done.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(done[2]).toMatchObject({
      type: 'function_call',
      call_id: 'call_77',
      name: 'exec_command',
      arguments: '{"cmd":"echo hello > probe.txt"}',
      status: 'completed',
    });
    expect(completed?.output).toHaveLength(3);
    expect(completed?.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('round-trips a function call and its output exactly (Codex input items with developer messages)', async () => {
    const { rollout, program } = await start({
      script: [{ toolCalls: [{ id: 'call_A', name: 'exec_command', arguments: '{"cmd": "ls"}' }] }, 'There is one file.'],
    });
    const baseInput: OpenAI.Responses.ResponseInputItem[] = [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'what is here?' }] },
    ];
    const first = await program.responses.create({ model: 'm', input: baseInput, tools: [execTool], store: false, stream: true });
    const items: OpenAI.Responses.ResponseOutputItem[] = [];
    for await (const event of first) if (event.type === 'response.output_item.done') items.push(event.item);
    const call = items[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'call_A', arguments: '{"cmd": "ls"}' });
    const second = await program.responses.create({
      model: 'm',
      tools: [execTool],
      store: false,
      input: [
        ...baseInput,
        {
          type: 'function_call',
          id: call.id,
          call_id: call.call_id,
          name: call.name,
          arguments: call.arguments,
          status: 'completed',
        },
        { type: 'function_call_output', call_id: 'call_A', output: 'Process exited with code 0\nOutput:\nprobe.txt\n' },
      ],
    });
    expect(second.output_text).toBe('There is one file.');
    expect(rollout.model.requests[1]?.request?.messages).toEqual([
      { role: 'system', content: 'You are Codex.' },
      { role: 'user', content: [{ type: 'text', text: 'what is here?' }] },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_A', name: 'exec_command', arguments: '{"cmd": "ls"}' }] },
      { role: 'tool', toolCallId: 'call_A', content: 'Process exited with code 0\nOutput:\nprobe.txt\n' },
    ]);
    expect(rollout.trace.branches).toHaveLength(1);
    expect(rollout.trace.numTurns).toBe(2);
  });

  it('reports a truncated reply as incomplete', async () => {
    const { program } = await start({ script: [{ content: 'partial answ', finishReason: 'length' }] });
    const reply = await program.responses.create({ model: 'm', input: 'write an essay' });
    expect(reply.status).toBe('incomplete');
    expect(reply.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });
});

// The real codex 0.171.0 with `[mcp_servers.troupe]` (one `add` tool) sends the server's tools in a
// `namespace` tool entry and echoes a namespaced function_call back (captured on loopback).
const captured = JSON.parse(readFileSync(new URL('./__fixtures__/codex-mcp-request.json', import.meta.url), 'utf8')) as {
  body: { tools: { type: string; name?: string }[]; input: { type: string }[] } & Record<string, unknown>;
};

describe('responses dialect: codex namespace (MCP) tools', () => {
  it('offers the functions of each namespace entry flattened to <namespace>__<name> (captured codex request)', () => {
    const { body } = captured;
    expect(body.tools.filter((t) => t.type === 'namespace').map((t) => t.name)).toEqual(['multi_agent_v1', 'mcp__troupe']);
    const { request } = responsesDialect.parseRequest(body);
    const names = request.tools?.map((t) => t.name) ?? [];
    expect(names).toContain('exec_command');
    expect(names).toContain('multi_agent_v1__spawn_agent');
    expect(request.tools?.find((t) => t.name === 'mcp__troupe__add')).toEqual({
      name: 'mcp__troupe__add',
      description: 'adds two numbers',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    });
    // Hosted tools (web_search) are still not offered.
    expect(names.some((n) => n.includes('web_search'))).toBe(false);
    // The echoed namespaced call and its MCP output read as one neutral call and result.
    const tail = request.messages.slice(-2);
    expect(tail[0]).toMatchObject({
      role: 'assistant',
      toolCalls: [{ id: 'call_1', name: 'mcp__troupe__add', arguments: '{"a":2,"b":40}' }],
    });
    expect(tail[1]).toMatchObject({ role: 'tool', toolCallId: 'call_1' });
    expect(String(tail[1]?.content)).toMatch(/\n\n42$/);
  });

  it('answers a call to a namespaced tool with name + namespace, streamed and not (what codex routes to the MCP server)', async () => {
    const call = { id: 'call_mcp', name: 'mcp__troupe__add', arguments: '{"a":2,"b":40}' };
    const { rollout } = await start({ script: [{ toolCalls: [call] }, { toolCalls: [call] }] });
    // The first request of the captured turn: everything before the model's call.
    const firstTurn = { ...captured.body, input: captured.body.input.slice(0, -2) };
    const post = (body: unknown) =>
      fetch(`${rollout.baseUrl}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${rollout.session.secret}` },
        body: JSON.stringify(body),
      });
    const streamed = await (await post(firstTurn)).text();
    const done = streamed
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; item?: Record<string, unknown> })
      .filter((event) => event.type === 'response.output_item.done');
    expect(done.map((event) => event.item)).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'call_mcp', name: 'add', namespace: 'mcp__troupe' }),
    ]);
    // The model was offered the flattened name.
    expect(rollout.model.requests[0]?.request?.tools?.map((t) => t.name)).toContain('mcp__troupe__add');
    const plain = (await (await post({ ...firstTurn, stream: false })).json()) as { output: Record<string, unknown>[] };
    expect(plain.output).toEqual([
      expect.objectContaining({ type: 'function_call', name: 'add', namespace: 'mcp__troupe', arguments: '{"a":2,"b":40}' }),
    ]);
  });

  it('leaves a plain function whose name contains __ as it is', async () => {
    const { program } = await start({ script: [{ toolCalls: [{ id: 'c1', name: 'mcp__x__y', arguments: '{}' }] }] });
    const reply = await program.responses.create({
      model: 'm',
      input: 'go',
      tools: [{ ...execTool, name: 'mcp__x__y' }],
    });
    expect(reply.output[0]).toMatchObject({ type: 'function_call', name: 'mcp__x__y' });
    expect(reply.output[0]).not.toHaveProperty('namespace');
  });
});
