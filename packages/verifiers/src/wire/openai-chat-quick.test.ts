import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expectQuickCheckAgrees } from '../../test/support/quick-check-agrees.ts';
import { ChatCompletionSchema, ChatRequestSchema } from './openai-chat.ts';
import { isChatCompletion, isChatRequest } from './openai-chat-quick.ts';

/** Any JSON-ish value, including the ones JSON cannot carry (undefined, NaN, ±Infinity). */
const anything = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.integer({ min: -3, max: 3 }),
  fc.double(),
  fc.constantFrom(0, 0.5, 1, 2.5, -1, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY),
  fc.string({ maxLength: 4 }),
  fc.constantFrom('auto', 'none', 'required', 'text', 'function'),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null)), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('type', 'name', 'text', 'x'), fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), {
    maxKeys: 3,
  }),
);

/** Mostly a valid value of a field, sometimes anything (so about a fifth of whole bodies are valid). */
const mostly = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 15 }, { arbitrary: anything, weight: 1 });

const content = mostly(
  fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('text'), text: mostly(fc.string()) }),
        fc.record({ type: fc.constant('image_url'), image_url: mostly(fc.record({ url: fc.string() })) }),
        fc.record({ type: mostly(fc.string()) }),
      ),
      { maxLength: 3 },
    ),
  ),
);

const toolCall = fc.record(
  {
    id: mostly(fc.string()),
    type: mostly(fc.constant('function')),
    function: mostly(
      fc.record({
        name: mostly(fc.string()),
        arguments: mostly(fc.oneof(fc.string(), fc.constant({ a: 1 }), fc.constant(null))),
      }),
    ),
  },
  { requiredKeys: ['id', 'function'] },
);

const message = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'developer', 'user'), content }),
  fc.record(
    {
      role: fc.constant('assistant'),
      content,
      tool_calls: mostly(fc.array(toolCall, { maxLength: 2 })),
      reasoning_content: mostly(fc.string()),
      reasoning: mostly(fc.string()),
    },
    { requiredKeys: ['role'] },
  ),
  fc.record({ role: fc.constant('tool'), tool_call_id: mostly(fc.string()), content }),
  fc.record({ role: anything, content }),
);

const request = fc.record(
  {
    model: mostly(fc.string()),
    messages: mostly(fc.array(message, { maxLength: 4 })),
    tools: mostly(
      fc.array(
        fc.record(
          {
            type: mostly(fc.constant('function')),
            function: mostly(
              fc.record(
                {
                  name: mostly(fc.string()),
                  description: mostly(fc.string()),
                  parameters: mostly(fc.constant({ type: 'object' })),
                },
                { requiredKeys: ['name'] },
              ),
            ),
          },
          { requiredKeys: ['type'] },
        ),
        { maxLength: 2 },
      ),
    ),
    tool_choice: mostly(
      fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.constant({ type: 'function', function: { name: 'f' } })),
    ),
    temperature: mostly(fc.double({ min: 0, max: 2, noNaN: true })),
    top_p: mostly(fc.double({ min: 0, max: 1, noNaN: true })),
    top_k: mostly(fc.integer()),
    min_p: mostly(fc.double({ min: 0, max: 1, noNaN: true })),
    max_tokens: mostly(fc.integer({ min: 1 })),
    max_completion_tokens: mostly(fc.integer({ min: 1 })),
    stop: mostly(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 2 }))),
    seed: mostly(fc.integer()),
    reasoning_effort: mostly(fc.string()),
    n: mostly(fc.integer({ min: 1, max: 2 })),
    stream: mostly(fc.boolean()),
    stream_options: mostly(fc.record({ include_usage: mostly(fc.boolean()) })),
    logprobs: mostly(fc.boolean()),
    return_token_ids: mostly(fc.boolean()),
    extra_field: anything,
  },
  { requiredKeys: [] },
);

const completion = fc.record(
  {
    id: mostly(fc.string()),
    model: mostly(fc.string()),
    choices: mostly(
      fc.array(
        fc.record(
          {
            message: mostly(
              fc.record(
                {
                  content: mostly(fc.string()),
                  tool_calls: mostly(fc.array(toolCall, { maxLength: 2 })),
                  reasoning_content: mostly(fc.string()),
                  reasoning: mostly(fc.string()),
                },
                { requiredKeys: [] },
              ),
            ),
            finish_reason: mostly(fc.constantFrom('stop', 'length', 'tool_calls')),
            logprobs: mostly(
              fc.record({
                content: mostly(
                  fc.array(fc.record({ token: mostly(fc.string()), logprob: mostly(fc.double({ max: 0, noNaN: true })) })),
                ),
              }),
            ),
            token_ids: mostly(fc.array(fc.integer({ min: 0 }), { maxLength: 4 })),
            prompt_token_ids: mostly(fc.array(fc.integer({ min: 0 }), { maxLength: 4 })),
          },
          { requiredKeys: ['message'] },
        ),
        { maxLength: 2 },
      ),
    ),
    usage: mostly(
      fc.record(
        {
          prompt_tokens: mostly(fc.integer({ min: 0 })),
          completion_tokens: mostly(fc.integer({ min: 0 })),
          prompt_tokens_details: mostly(fc.record({ cached_tokens: mostly(fc.integer({ min: 0 })) })),
          completion_tokens_details: mostly(fc.record({ reasoning_tokens: mostly(fc.integer({ min: 0 })) })),
          cost: mostly(fc.double({ min: 0, noNaN: true })),
        },
        { requiredKeys: [] },
      ),
    ),
    prompt_token_ids: mostly(fc.array(fc.integer({ min: 0 }), { maxLength: 4 })),
    policy_version: mostly(fc.integer({ min: 0 })),
  },
  { requiredKeys: ['choices'] },
);

const system = { role: 'system', content: 'You are careful.' };

describe('quick checks of the chat bodies', () => {
  it('isChatRequest accepts only what ChatRequestSchema accepts', () => {
    expectQuickCheckAgrees(request, isChatRequest, ChatRequestSchema);
  });

  it('isChatCompletion accepts only what ChatCompletionSchema accepts', () => {
    expectQuickCheckAgrees(completion, isChatCompletion, ChatCompletionSchema);
  });

  it('takes the quick path for the bodies programs and vLLM send, and leaves bad ones to the schema', () => {
    expect(
      isChatRequest({
        model: 'm',
        messages: [
          system,
          { role: 'user', content: [{ type: 'text', text: 'hi' }] },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: '4' },
        ],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        temperature: 0.7,
        max_tokens: 64,
        stream: false,
        stream_options: null,
        store: false,
      }),
    ).toBe(true);
    expect(
      isChatCompletion({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: 'm',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: '4' },
            finish_reason: 'stop',
            logprobs: { content: [{ token: 'token_id:19', logprob: -0.1 }] },
            token_ids: [19],
          },
        ],
        usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 },
        prompt_token_ids: [1, 2, 3],
      }),
    ).toBe(true);
    expect(isChatRequest({ model: 'm', messages: [system], temperature: -1 })).toBe(false);
    expect(isChatRequest({ model: 'm', messages: [{ role: 'user' }] })).toBe(false);
    expect(isChatRequest({ model: 'm', messages: [system], max_tokens: 1.5 })).toBe(false);
    expect(isChatCompletion({ choices: [] })).toBe(false);
    expect(isChatCompletion({ choices: [{ message: {} }], usage: { prompt_tokens: -1 } })).toBe(false);
  });
});
