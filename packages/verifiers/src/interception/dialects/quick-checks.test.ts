import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expectQuickCheckAgrees } from '../../../test/support/quick-check-agrees.ts';
import { isMessagesRequest, MessagesRequestSchema } from './messages.ts';
import { isResponsesRequest, ResponsesRequestSchema } from './responses.ts';

/** Any JSON-ish value, including the ones JSON cannot carry (undefined, NaN, ±Infinity). */
const anything = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.integer({ min: -3, max: 3 }),
  fc.double(),
  fc.string({ maxLength: 4 }),
  fc.constantFrom('user', 'assistant', 'system', 'developer', 'message', 'function_call', 'text'),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null)), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('type', 'name', 'text', 'role'), fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), {
    maxKeys: 3,
  }),
);

/** Mostly a valid value of a field, sometimes anything (so a good share of whole bodies are valid). */
const mostly = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 15 }, { arbitrary: anything, weight: 1 });

const blocks = mostly(
  fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.array(fc.record({ type: mostly(fc.constantFrom('text', 'tool_use', 'tool_result')), text: anything }), { maxLength: 3 }),
  ),
);

const messagesRequest = fc.record(
  {
    model: mostly(fc.string()),
    max_tokens: mostly(fc.integer({ min: 1 })),
    system: blocks,
    messages: mostly(
      fc.array(fc.record({ role: mostly(fc.constantFrom('user', 'assistant', 'system')), content: blocks }), { maxLength: 4 }),
    ),
    tools: mostly(fc.array(fc.record({ name: mostly(fc.string()), input_schema: anything }), { maxLength: 2 })),
    tool_choice: mostly(
      fc.record({ type: mostly(fc.constantFrom('auto', 'tool')), name: mostly(fc.string()) }, { requiredKeys: ['type'] }),
    ),
    stop_sequences: mostly(fc.array(fc.string(), { maxLength: 2 })),
    thinking: mostly(fc.record({ type: mostly(fc.constant('enabled')), budget_tokens: mostly(fc.integer({ min: 0 })) })),
    output_config: mostly(fc.record({ effort: mostly(fc.constantFrom('low', 'high')) })),
    stream: mostly(fc.boolean()),
    metadata: anything,
  },
  { requiredKeys: [] },
);

const inputItem = fc.oneof(
  fc.record({ role: mostly(fc.constantFrom('user', 'assistant', 'system', 'developer')), content: blocks }),
  fc.record({ type: mostly(fc.constant('message')), role: anything, content: blocks }),
  fc.record({
    type: mostly(fc.constant('function_call')),
    call_id: anything,
    name: mostly(fc.string()),
    arguments: mostly(fc.string()),
  }),
  fc.record({ type: mostly(fc.constant('reasoning')), summary: anything }),
  fc.record({ type: anything, role: anything, content: anything }, { requiredKeys: [] }),
);

const responsesRequest = fc.record(
  {
    model: mostly(fc.string()),
    input: mostly(fc.oneof(fc.string(), fc.array(inputItem, { maxLength: 4 }))),
    instructions: mostly(fc.string()),
    tools: mostly(fc.array(fc.record({ type: mostly(fc.constant('function')), name: anything }), { maxLength: 2 })),
    tool_choice: mostly(
      fc.oneof(fc.constant('auto'), fc.record({ type: mostly(fc.constant('function')), name: mostly(fc.string()) })),
    ),
    max_output_tokens: mostly(fc.integer({ min: 1 })),
    reasoning: mostly(fc.record({ effort: mostly(fc.constantFrom('low', 'high')) })),
    stream: mostly(fc.boolean()),
    previous_response_id: mostly(fc.string()),
    store: anything,
  },
  { requiredKeys: [] },
);

describe('quick checks of the messages and responses request bodies', () => {
  it('isMessagesRequest accepts only what MessagesRequestSchema accepts', () => {
    expectQuickCheckAgrees(messagesRequest, isMessagesRequest, MessagesRequestSchema);
  });

  it('isResponsesRequest accepts only what ResponsesRequestSchema accepts', () => {
    expectQuickCheckAgrees(responsesRequest, isResponsesRequest, ResponsesRequestSchema);
  });

  it('takes the quick path for what Claude Code and codex send, and leaves bad bodies to the schema', () => {
    expect(
      isMessagesRequest({
        model: 'claude',
        max_tokens: 1024,
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'Bash', input: { command: 'ls' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'a.txt' }] },
        ],
        tools: [{ name: 'Bash', input_schema: { type: 'object' } }],
        thinking: { type: 'enabled', budget_tokens: 2048 },
        stream: true,
      }),
    ).toBe(true);
    expect(
      isResponsesRequest({
        model: 'gpt',
        instructions: 'You are codex.',
        input: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
          { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c', output: 'ok' },
          { role: 'user', content: 'next' },
        ],
        tools: [{ type: 'function', name: 'shell', parameters: {} }],
        tool_choice: 'auto',
        stream: true,
      }),
    ).toBe(true);
    expect(isMessagesRequest({ model: 'm', messages: [{ role: 'tool', content: 'x' }] })).toBe(false);
    expect(isMessagesRequest({ model: 'm', messages: [], max_tokens: 0 })).toBe(false);
    expect(isResponsesRequest({ model: 'm', input: [{ role: 'user' }] })).toBe(false);
    expect(isResponsesRequest({ model: 'm', input: 3 })).toBe(false);
  });
});
