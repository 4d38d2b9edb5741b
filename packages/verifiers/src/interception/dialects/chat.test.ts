import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type InterceptedRollout, startInterceptedRollout } from '../../testing/intercepted-rollout.ts';
import type { ScriptedModelServerOptions } from '../../testing/scripted-model-server.ts';

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

async function start(options: Partial<ScriptedModelServerOptions> & Parameters<typeof startInterceptedRollout>[0]) {
  rollout = await startInterceptedRollout(options);
  const program = new OpenAI({ baseURL: rollout.baseUrl, apiKey: rollout.session.secret, maxRetries: 0 });
  return { rollout, program };
}

const bashTool = {
  type: 'function' as const,
  function: {
    name: 'bash',
    description: 'Run a shell command',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
};

describe('chat dialect through interception', () => {
  it('answers a non-streaming chat completion with the run model imposed and the call recorded', async () => {
    const { rollout, program } = await start({ script: ['four'], runModel: 'policy-7b', sampling: { temperature: 0.3 } });
    const reply = await program.chat.completions.create({
      model: 'whatever-the-program-asks',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 2+2?' },
      ],
      temperature: 1.5,
      max_tokens: 64,
    });
    expect(reply.choices[0]?.message.content).toBe('four');
    expect(reply.choices[0]?.finish_reason).toBe('stop');
    expect(reply.model).toBe('policy-7b');
    // The model server saw the run's model and the run's temperature, with the program's max_tokens.
    const seen = rollout.model.requests[0]?.body as Record<string, unknown>;
    expect(seen.model).toBe('policy-7b');
    expect(seen.temperature).toBe(0.3);
    expect(seen.max_tokens).toBe(64);
    expect(rollout.trace.calls).toHaveLength(1);
    expect(rollout.trace.calls[0]?.dialect).toBe('chat');
    expect(rollout.trace.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(rollout.trace.lastReply).toBe('four');
  });

  it('streams chunks, tool-call deltas, [DONE] and a usage chunk when include_usage is set', async () => {
    const { program } = await start({
      script: [
        {
          content: 'Let me look around the directory first.',
          toolCalls: [{ id: 'call_1', name: 'bash', arguments: '{"command": "ls -la /tmp"}' }],
          usage: { promptTokens: 11, completionTokens: 7 },
        },
      ],
    });
    const stream = await program.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'list files' }],
      tools: [bashTool],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let args = '';
    let id = '';
    let name = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      content += choice.delta.content ?? '';
      for (const call of choice.delta.tool_calls ?? []) {
        if (call.id) id = call.id;
        if (call.function?.name) name = call.function.name;
        args += call.function?.arguments ?? '';
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(content).toBe('Let me look around the directory first.');
    expect({ id, name, args }).toEqual({ id: 'call_1', name: 'bash', args: '{"command": "ls -la /tmp"}' });
    expect(finish).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  it('keeps tool call ids, argument strings and tool results exact across a tool round trip', async () => {
    const { rollout, program } = await start({
      script: [
        { toolCalls: [{ id: 'call_Xy9', name: 'bash', arguments: '{ "command":"echo hi" }' }] },
        'The command printed hi.',
      ],
    });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'say hi with bash' }];
    const first = await program.chat.completions.create({ model: 'm', messages, tools: [bashTool] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(call).toMatchObject({
      id: 'call_Xy9',
      type: 'function',
      function: { name: 'bash', arguments: '{ "command":"echo hi" }' },
    });
    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: 'call_Xy9', content: 'hi\n' });
    const second = await program.chat.completions.create({ model: 'm', messages, tools: [bashTool], stream: true });
    let text = '';
    for await (const chunk of second) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('The command printed hi.');

    // The model server got the tool call and result verbatim.
    const seen = rollout.model.requests[1]?.request;
    expect(seen?.messages).toEqual([
      { role: 'user', content: 'say hi with bash' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_Xy9', name: 'bash', arguments: '{ "command":"echo hi" }' }] },
      { role: 'tool', toolCallId: 'call_Xy9', content: 'hi\n' },
    ]);
    // One branch in the trace: user → assistant(tool call) → tool → assistant.
    expect(rollout.trace.branches).toHaveLength(1);
    expect(rollout.trace.messages).toEqual([
      { role: 'user', content: 'say hi with bash' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_Xy9', name: 'bash', arguments: '{ "command":"echo hi" }' }] },
      { role: 'tool', toolCallId: 'call_Xy9', content: 'hi\n' },
      { role: 'assistant', content: 'The command printed hi.' },
    ]);
    expect(rollout.trace.tools.map((t) => t.name)).toEqual(['bash']);
  });

  it('carries reasoning_content and image parts, and maps developer messages to system', async () => {
    const { rollout, program } = await start({ script: [{ content: 'a cat', reasoning: 'The picture shows whiskers.' }] });
    const reply = await program.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'developer', content: 'Describe images.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect((reply.choices[0]!.message as unknown as { reasoning_content: string }).reasoning_content).toBe(
      'The picture shows whiskers.',
    );
    expect(rollout.model.requests[0]?.request?.messages).toEqual([
      { role: 'system', content: 'Describe images.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', url: 'data:image/png;base64,AAAA' },
        ],
      },
    ]);
    expect(rollout.trace.messages.at(-1)).toEqual({
      role: 'assistant',
      content: 'a cat',
      reasoning: 'The picture shows whiskers.',
    });
  });
});
