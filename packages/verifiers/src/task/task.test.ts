import { describe, expect, it } from 'vitest';
import { Task } from './task.ts';

const correct = { name: 'correct', fn: () => 1 };

describe('Task.with and Task.derive (issue 22 item 6)', () => {
  const task = new Task<{ prompt: string | null; answer: number }>(
    { prompt: 'What is 2 + 2?', answer: 4 },
    { key: 'k', rewards: [correct], metrics: [correct] },
  );

  it('with() is a variant for the same role: rewards, metrics and key kept', () => {
    const variant = task.with({ prompt: null });
    expect(variant.rewards).toEqual([correct]);
    expect(variant.metrics).toEqual([correct]);
    expect(variant.key).toBe('k');
    expect(variant.data.answer).toBe(4);
  });

  it("derive() is a task for another role: none of the original's rewards, metrics or hooks unless asked", () => {
    const withHooks = new Task({ prompt: 'p' }, { key: 'k', rewards: [correct], finalize: () => {}, setup: () => {} });
    const derived = withHooks.derive({ prompt: 'Score 0-10' });
    expect(derived.rewards).toEqual([]);
    expect(derived.metrics).toEqual([]);
    expect(derived.finalize).toBeUndefined();
    expect(derived.setup).toBeUndefined();
    expect(derived.key).toBe('k');
    expect(derived.data.prompt).toBe('Score 0-10');
    expect(withHooks.derive({}, { rewards: withHooks.rewards }).rewards).toEqual([correct]);
  });
});
