import { describe, expect, it } from 'vitest';
import type { Message } from '../model/messages.ts';
import { canonicalJson, sha256 } from '../util/hash.ts';
import { messageHash, Trace } from './trace.ts';
import { MessageNodeSchema, sampledAdvantage } from './trace-schema.ts';

const makeTrace = () =>
  new Trace({ task: { key: 'k', hash: 'h', data: { prompt: 'hi' } }, agent: { name: 'solver', trainable: true } });

describe('Trace', () => {
  it('records calls with token ids, continuing the token sequence across turns', () => {
    const trace = makeTrace();
    const user = { role: 'user' as const, content: 'hi' };
    const reply = { role: 'assistant' as const, content: 'hello' };
    trace.recordCall(
      { model: 'm', messages: [user], sampling: {} },
      {
        id: '1',
        model: 'm',
        message: reply,
        finishReason: 'stop',
        usage: { promptTokens: 3, completionTokens: 2 },
        promptTokenIds: [1, 2, 3],
        completionTokenIds: [4, 5],
        completionLogprobs: [-0.1, -0.2],
      },
      { dialect: 'chat', startedAt: 0, durationMs: 1 },
    );
    const second = trace.recordCall(
      { model: 'm', messages: [user, reply, { role: 'user', content: 'more' }], sampling: {} },
      {
        id: '2',
        model: 'm',
        message: { role: 'assistant', content: 'ok' },
        finishReason: 'stop',
        usage: { promptTokens: 7, completionTokens: 1 },
        promptTokenIds: [1, 2, 3, 4, 5, 6, 7],
        completionTokenIds: [8],
        completionLogprobs: [-0.3],
      },
      { dialect: 'chat', startedAt: 0, durationMs: 1 },
    );
    expect(second.tokenIds).toEqual([6, 7, 8]);
    expect(second.mask).toEqual([false, false, true]);
    expect(second.tokenParent).toBe(1);
    expect(trace.tokenSequence(second.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(trace.numTurns).toBe(2);
    expect(trace.lastReply).toBe('ok');
    expect(trace.branches).toHaveLength(1);
    expect(trace.usage).toEqual({ promptTokens: 10, completionTokens: 3 });
  });

  it('starts a new token branch when the prompt does not extend the earlier tokens', () => {
    const trace = makeTrace();
    const user = { role: 'user' as const, content: 'hi' };
    trace.recordCall(
      { model: 'm', messages: [user], sampling: {} },
      {
        id: '1',
        model: 'm',
        message: { role: 'assistant', content: 'a' },
        finishReason: 'stop',
        usage: { promptTokens: 1, completionTokens: 1 },
        promptTokenIds: [1],
        completionTokenIds: [2],
      },
      { dialect: 'chat', startedAt: 0, durationMs: 1 },
    );
    const node = trace.recordCall(
      { model: 'm', messages: [user, { role: 'assistant', content: 'a' }, { role: 'user', content: 'x' }], sampling: {} },
      {
        id: '2',
        model: 'm',
        message: { role: 'assistant', content: 'b' },
        finishReason: 'stop',
        usage: { promptTokens: 3, completionTokens: 1 },
        promptTokenIds: [9, 9, 9],
        completionTokenIds: [3],
      },
      { dialect: 'chat', startedAt: 0, durationMs: 1 },
    );
    expect(node.tokenParent).toBeNull();
    expect(node.tokenIds).toEqual([9, 9, 9, 3]);
  });

  it('round-trips through JSON', () => {
    const trace = makeTrace();
    trace.recordCall(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }], sampling: { temperature: 1 } },
      {
        id: '1',
        model: 'm',
        message: { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"cmd":"ls"}' }] },
        finishReason: 'tool_calls',
        usage: { promptTokens: 1, completionTokens: 1 },
      },
      { dialect: 'chat', startedAt: 0, durationMs: 1 },
    );
    trace.recordReward('correct', 1, 0.5);
    trace.recordMetric('turns', 1);
    trace.recordError(new Error('boom'), 'agent');
    const copy = Trace.fromJSON(JSON.parse(JSON.stringify(trace)));
    expect(copy.toJSON()).toEqual(trace.toJSON());
    expect(copy.reward).toBe(0.5);
    expect(copy.ok).toBe(false);
    expect(copy.stopCondition).toBe('error');
  });

  it('rejects a malformed record naming the field', () => {
    const record = makeTrace().toJSON() as unknown as Record<string, unknown>;
    record.nodes = [{ id: -1 }];
    expect(() => Trace.fromJSON(record)).toThrow(/nodes/);
  });
});

describe("a node's advantages", () => {
  const node = { id: 0, parent: null, message: { role: 'assistant' as const, content: 'x' }, sampled: true, timestamp: 0 };
  it("reads a sampled token's value from the node's one advantage or its per-token list", () => {
    expect(sampledAdvantage({ ...node, advantage: 0.5 }, 3)).toBe(0.5);
    expect(sampledAdvantage({ ...node, advantages: [1, 2] }, 1)).toBe(2);
    expect(sampledAdvantage({ ...node, advantages: [1, 2] }, 2)).toBeUndefined();
    expect(sampledAdvantage(node, 0)).toBeUndefined();
  });
  it('refuses a saved node with both forms, naming the field', () => {
    expect(MessageNodeSchema.parse({ ...node, advantage: -0.25 }).advantage).toBe(-0.25);
    const both = MessageNodeSchema.safeParse({ ...node, advantage: 1, advantages: [1] });
    expect(both.success).toBe(false);
    expect(both.error?.issues[0]).toMatchObject({ path: ['advantages'], message: expect.stringMatching(/not both/) });
  });
});

describe('messageHash', () => {
  const generic = (value: unknown) => sha256(canonicalJson(value));
  it('hashes plain-text messages exactly as the canonical JSON of their normalized form', () => {
    const text = '  Ünïcode "quotes" \\ back\nslash\t ';
    expect(messageHash({ role: 'system', content: text })).toBe(generic({ r: 'system', c: text.trim() }));
    expect(messageHash({ role: 'user', content: text })).toBe(generic({ r: 'user', c: text.trim() }));
    expect(messageHash({ role: 'tool', toolCallId: 'c1', content: text })).toBe(generic({ r: 'tool', id: 'c1', c: text.trim() }));
    expect(messageHash({ role: 'assistant', content: text })).toBe(generic({ r: 'assistant', c: text.trim(), t: [] }));
    expect(messageHash({ role: 'assistant', content: null })).toBe(generic({ r: 'assistant', c: '', t: [] }));
    const parts = [{ type: 'text' as const, text: ' a ' }];
    expect(messageHash({ role: 'user', content: parts })).toBe(generic({ r: 'user', c: parts }));
    expect(
      messageHash({ role: 'assistant', content: 'x', toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"b": 1, "a": 2}' }] }),
    ).toBe(generic({ r: 'assistant', c: 'x', t: [{ id: 'c1', n: 'bash', a: { a: 2, b: 1 } }] }));
  });

  it('matches re-sent messages by their current text, also when the same object was edited', () => {
    const trace = makeTrace();
    const message: Message = { role: 'user', content: 'first' };
    const first = trace.addPrompt([message]);
    expect(trace.addPrompt([{ role: 'user', content: ' first\n' }])).toBe(first);
    message.content = 'second';
    const second = trace.addPrompt([message]);
    expect(second).not.toBe(first);
    expect(trace.addPrompt([{ role: 'user', content: 'second' }])).toBe(second);
    const long = 'x'.repeat(1000);
    const longId = trace.addPrompt([{ role: 'user', content: long }]);
    expect(trace.addPrompt([{ role: 'user', content: `${long} ` }])).toBe(longId);
    expect(trace.addPrompt([{ role: 'user', content: `${long}y` }])).not.toBe(longId);
    const plain = trace.addMessage({ role: 'assistant', content: 'x' }, second);
    expect(trace.addMessage({ role: 'assistant', content: 'x' }, second)).toBe(plain);
    const edited: Message = { role: 'assistant', content: 'y' };
    const before = trace.addMessage(edited, second);
    edited.toolCalls = [{ id: 'c1', name: 'bash', arguments: '{}' }];
    expect(trace.addMessage(edited, second)).not.toBe(before);
    const restored = Trace.fromJSON(JSON.parse(JSON.stringify(trace)));
    expect(restored.addPrompt([{ role: 'user', content: `${long}` }])).toBe(longId);
    expect(restored.addMessage({ role: 'assistant', content: 'x ' }, second)).toBe(plain);
  });

  it('keys long plain texts by role and text, as new objects and as one edited object', () => {
    const trace = makeTrace();
    const system = 'You are careful. '.repeat(40);
    const other = `${system.slice(0, -1)}!`;
    const first = trace.addPrompt([{ role: 'system', content: system }]);
    expect(trace.addPrompt([{ role: 'system', content: `${system}`.slice(0) }])).toBe(first);
    expect(trace.addPrompt([{ role: 'system', content: other }])).not.toBe(first);
    const asUser = trace.addPrompt([{ role: 'user', content: system }]);
    expect(asUser).not.toBe(first);
    expect(trace.addPrompt([{ role: 'user', content: system }])).toBe(asUser);
    const edited: Message = { role: 'system', content: system };
    expect(trace.addPrompt([edited])).toBe(first);
    edited.content = other;
    expect(trace.addPrompt([edited])).toBe(trace.addPrompt([{ role: 'system', content: other }]));
    expect(trace.addPrompt([edited])).not.toBe(first);
  });

  it('indexes several children per parent, a sampled node taking over its content key, also after fromJSON', () => {
    const trace = makeTrace();
    const root = trace.addPrompt([{ role: 'user', content: 'q' }]) as number;
    const a = trace.addMessage({ role: 'assistant', content: 'a' }, root);
    const b = trace.addMessage({ role: 'assistant', content: 'b' }, root);
    const c = trace.addMessage({ role: 'assistant', content: 'c' }, root);
    expect(new Set([a, b, c]).size).toBe(3);
    expect([
      trace.addMessage({ role: 'assistant', content: 'a' }, root),
      trace.addMessage({ role: 'assistant', content: 'b' }, root),
      trace.addMessage({ role: 'assistant', content: 'c' }, root),
    ]).toEqual([a, b, c]);
    // Sampled replies are always new nodes and become the match for their content (first slot and map).
    const sampledA = trace.addMessage({ role: 'assistant', content: 'a' }, root, true);
    const sampledC = trace.addMessage({ role: 'assistant', content: 'c' }, root, true);
    expect(sampledA).not.toBe(a);
    expect(sampledC).not.toBe(c);
    expect(trace.addMessage({ role: 'assistant', content: 'a' }, root)).toBe(sampledA);
    expect(trace.addMessage({ role: 'assistant', content: 'c' }, root)).toBe(sampledC);
    expect(trace.addMessage({ role: 'assistant', content: 'b' }, root)).toBe(b);
    expect(trace.addPrompt([{ role: 'user', content: 'q' }])).toBe(root);
    const restored = Trace.fromJSON(JSON.parse(JSON.stringify(trace)));
    expect(restored.addMessage({ role: 'assistant', content: 'a' }, root)).toBe(sampledA);
    expect(restored.addMessage({ role: 'assistant', content: 'b' }, root)).toBe(b);
    expect(restored.addMessage({ role: 'assistant', content: 'c' }, root)).toBe(sampledC);
    expect(restored.addMessage({ role: 'assistant', content: 'd' }, root)).toBe(restored.nodes.length - 1);
  });
});
