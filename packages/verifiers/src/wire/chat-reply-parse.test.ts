import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { liftedLogprobs, parseChatReply, parseChatReplyPlain, restoreLiftedLogprobs } from './chat-reply-parse.ts';
import { type ChatCompletion, chatCompletionToResponse } from './openai-chat.ts';
import { isChatCompletion } from './openai-chat-quick.ts';

/** A token text: plain words, escapes JSON must write, astral and lone surrogates. */
const token = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(' the', '\u001f', '\n', '"', '\\', '\u0000', '\t', 'é', '😀', '\ud800', '</s>', 'token_id:42'),
  fc.string({ unit: 'binary', maxLength: 4 }),
);
/** A logprob as a server writes it: any double JSON can hold, and the text forms Python writes. */
const logprobText = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  fc.constantFrom(
    '-9999.0',
    '-0.0',
    '-0',
    '0',
    '-1e-05',
    '-1.5E+2',
    '-2.220446049250313e-16',
    '1e400',
    '-123456789012345678901234',
  ),
);
const entry = fc.record({
  token,
  logprob: logprobText,
  bytes: fc.option(fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 5 })),
  withBytes: fc.boolean(),
  withTop: fc.boolean(),
});
const choice = fc.record({
  entries: fc.array(entry, { maxLength: 12 }),
  withIds: fc.boolean(),
  content: fc.string({ maxLength: 20 }),
});

interface Choice {
  entries: { token: string; logprob: string; bytes: number[] | null; withBytes: boolean; withTop: boolean }[];
  withIds: boolean;
  content: string;
}

/** A chat completion's text in the compact shape vLLM writes (key order, no whitespace). */
function replyText(choices: Choice[]): string {
  const parts = choices.map((c, index) => {
    const entries = c.entries.map((e) => {
      let text = `{"token":${JSON.stringify(e.token)},"logprob":${e.logprob}`;
      if (e.withBytes) text += `,"bytes":${JSON.stringify(e.bytes)}`;
      if (e.withTop) text += ',"top_logprobs":[]';
      return `${text}}`;
    });
    const ids = c.withIds ? `,"token_ids":[${c.entries.map((_, i) => i + 7).join(',')}]` : '';
    return `{"index":${index},"message":{"role":"assistant","content":${JSON.stringify(c.content)}},"logprobs":{"content":[${entries.join(',')}]},"finish_reason":"stop"${ids}}`;
  });
  return `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[${parts.join(',')}],"usage":{"prompt_tokens":3,"completion_tokens":2},"prompt_token_ids":[1,2,3]}`;
}

/** Parses both ways; both throw, or both give the same value once the lifted entries are restored. */
function expectSameParse(text: string): void {
  let plain: unknown;
  let plainError: unknown = null;
  try {
    plain = parseChatReplyPlain(text);
  } catch (error) {
    plainError = error;
  }
  if (plainError) {
    expect(() => parseChatReply(text)).toThrow(SyntaxError);
    return;
  }
  const fast = parseChatReply(text) as { choices?: { logprobs?: { content?: unknown } }[] };
  const plainChoices = (plain as { choices?: { logprobs?: { content?: { token: string; logprob: number }[] } }[] }).choices;
  for (const [index, c] of (Array.isArray(fast?.choices) ? fast.choices : []).entries()) {
    const lifted = liftedLogprobs(c?.logprobs);
    if (!lifted) continue;
    const entries = plainChoices?.[index]?.logprobs?.content ?? [];
    expect(lifted.logprobs.map((x) => (Object.is(x, -0) ? '-0' : x))).toEqual(
      entries.map((e) => (Object.is(e.logprob, -0) ? '-0' : e.logprob)),
    );
    expect(lifted.tokens()).toEqual(entries.map((e) => e.token));
  }
  restoreLiftedLogprobs(fast);
  expect(fast).toEqual(plain);
}

describe('parseChatReply', () => {
  it('lifts the logprob entries of a compact vLLM reply', () => {
    const text = replyText([
      {
        entries: [
          { token: ' a', logprob: '-0.5', bytes: [32, 97], withBytes: true, withTop: true },
          { token: '"', logprob: '-1e-3', bytes: null, withBytes: true, withTop: true },
        ],
        withIds: true,
        content: ' a"',
      },
    ]);
    const reply = parseChatReply(text) as ChatCompletion;
    expect(reply.choices[0]?.logprobs?.content).toEqual([]);
    expect(liftedLogprobs(reply.choices[0]?.logprobs)?.logprobs).toEqual([-0.5, -0.001]);
    expect(liftedLogprobs(reply.choices[0]?.logprobs)?.tokens()).toEqual([' a', '"']);
  });

  it('gives what JSON.parse gives, for any compact reply', () => {
    fc.assert(
      fc.property(fc.array(choice, { minLength: 1, maxLength: 3 }), (choices) => {
        const text = replyText(choices);
        expectSameParse(text);
        const fast = parseChatReply(text);
        const plain = parseChatReplyPlain(text);
        if (isChatCompletion(plain)) {
          expect(isChatCompletion(fast)).toBe(true);
          expect(chatCompletionToResponse(fast as ChatCompletion, 'm')).toEqual(chatCompletionToResponse(plain, 'm'));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('throws when JSON.parse throws and agrees with it otherwise, for damaged replies', () => {
    const damaged = fc
      .tuple(
        fc.array(choice, { minLength: 1, maxLength: 2 }),
        fc.nat(),
        fc.nat(),
        fc.constantFrom('', ' ', '"', ',', ']', '}', '\\', '-', '0', 'e', '\n', '[', '{"x":1}'),
      )
      .map(([choices, at, cut, insert]) => {
        const text = replyText(choices);
        const i = at % text.length;
        return text.slice(0, i) + insert + text.slice(i + (cut % 3));
      });
    fc.assert(
      fc.property(damaged, (text) => expectSameParse(text)),
      { numRuns: 1500 },
    );
  });

  it('falls back to JSON.parse for shapes it does not lift: whitespace, other keys, top logprobs, arrays outside choices', () => {
    const texts = [
      '{"choices":[{"logprobs":{"content":[{"token": "a","logprob":-1}]}}]}',
      '{"choices":[{"logprobs":{"content":[{"logprob":-1,"token":"a"}]}}]}',
      '{"choices":[{"logprobs":{"content":[{"token":"a","logprob":-1,"top_logprobs":[{"token":"b","logprob":-2}]}]}}]}',
      '{"choices":[],"extra":{"logprobs":{"content":[{"token":"a","logprob":-1}]}}}',
      '{"choices":[{"logprobs":{"content":[]}}],"other":[{"logprobs":{"content":[{"token":"a","logprob":-1}]}}]}',
      '{"choices":[{"logprobs":{"content":[{"token":"a","logprob":+1}]}}]}',
      '{"choices":[{"logprobs":{"content":[{"token":"a","logprob":01}]}}]}',
      `{"choices":[{"logprobs":{"content":"\\u0000lift-0"}}]}`,
    ];
    for (const text of texts) expectSameParse(text);
    expect(liftedLogprobs((parseChatReply(texts[0] as string) as ChatCompletion).choices[0]?.logprobs)).toBeUndefined();
  });
});
