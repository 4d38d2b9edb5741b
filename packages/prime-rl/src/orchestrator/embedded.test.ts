import { Task, Taskset } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { embeddedPolicy } from './embedded.ts';

const taskset = Taskset.fromTasks(
  'words',
  ['alpha beta', 'gamma beta', 'delta epsilon', 'zeta'].map(
    (prompt, idx) => new Task({ idx, prompt }, { key: `t${idx}`, type: 'w' }),
  ),
);
const shape = { dModel: 8, layers: 1, heads: 2, ffnMult: 1, seed: 0 };

describe('embeddedPolicy (any text env)', () => {
  it('builds the vocabulary from the rendered prompts of the first vocabSample tasks plus a vocabulary list; the rest is <unk>', () => {
    const { tokenizer, policy } = embeddedPolicy({
      sources: [{ options: {}, taskset }],
      vocabSample: 2,
      vocabulary: ['omega'],
      maxTokens: 3,
      ...shape,
    });
    expect(tokenizer.vocab.slice(6)).toEqual(['omega', 'alpha', 'beta', 'gamma']);
    expect(tokenizer.encode('delta omega beta')).toEqual([1, tokenizer.id('omega'), tokenizer.id('beta')]);
    expect(policy.outputTokens).toBeUndefined();
    // The longest sampled conversation (<user> + 2 words + <asst>) + 3 reply tokens + 1, rounded up to 8.
    expect(policy.contextLength).toBe(8);
    expect(policy.vocabSize).toBe(tokenizer.size);
  });

  it('restricts the reply head to the words an env declares, with <eos> when replies are longer than one token', () => {
    const hooks = { vocabulary: () => ['[yes] [no]'], replyVocabulary: () => ['[yes]', '[no]'] };
    const one = embeddedPolicy({ sources: [{ hooks, options: {}, taskset }], maxTokens: 1, ...shape });
    expect(one.policy.outputTokens).toEqual([one.tokenizer.id('[yes]'), one.tokenizer.id('[no]')]);
    const many = embeddedPolicy({ sources: [{ hooks, options: {}, taskset }], maxTokens: 4, ...shape });
    expect(many.policy.outputTokens).toEqual([many.tokenizer.id('[yes]'), many.tokenizer.id('[no]'), many.tokenizer.eosId]);
  });
});
