import { describe, expect, it } from 'vitest';
import { Task, type TaskData, TaskDataSchema } from './task.ts';

const correct = { name: 'correct', fn: () => 1 };

describe('Task.with and Task.derive', () => {
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

describe('Task.with validates the patched fields without re-parsing the whole task', () => {
  const task = new Task<TaskData & { answer: number }>({ prompt: 'p', info: { seed: 3 }, answer: 4 }, { key: 'k' });

  it('refuses a bad patched field, naming it, as the constructor would', () => {
    expect(() => task.with({ systemPrompt: 3 as never })).toThrow(/invalid task data at systemPrompt:/);
    expect(() => task.with({ timeout: { agent: -1 } })).toThrow(/invalid task data at timeout\.agent:/);
    expect(() => new Task({ prompt: 'p', timeout: { agent: -1 } })).toThrow(/invalid task data at timeout\.agent:/);
    expect(() => task.derive({ prompt: 5 as never })).toThrow(/invalid task data at prompt:/);
  });

  it('gives the same data, hash and key as a task made from the merged data', () => {
    const variant = task.with({ prompt: null, systemPrompt: 'You hold K.', answer: 5 });
    const direct = new Task({ prompt: null, info: { seed: 3 }, answer: 5, systemPrompt: 'You hold K.' }, { key: 'k' });
    expect(variant.data).toEqual(direct.data);
    expect(variant.hash).toBe(direct.hash);
    expect(Object.isFrozen(variant.data)).toBe(true);
    expect(task.data.prompt).toBe('p');
  });

  it('stamps records whose hash reads, spreads and serializes as a field (hashed when read)', () => {
    const record = task.record;
    expect(Object.keys(record)).toEqual(['key', 'hash', 'data']);
    expect(JSON.parse(JSON.stringify(record))).toEqual({
      key: 'k',
      hash: task.hash,
      data: { prompt: 'p', info: { seed: 3 }, answer: 4 },
    });
    expect({ ...record }.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.fromEntries(Object.entries(record)).hash).toBe(task.hash);
    expect(structuredClone(record).hash).toBe(task.hash);
  });
});

describe('Task data checks without zod (the common fields) agree with TaskDataSchema', () => {
  it('accepts and refuses exactly what the schema does', () => {
    const cases: unknown[] = [
      { prompt: 'p' },
      { prompt: null, idx: 3, info: { seed: 3 }, systemPrompt: 's', name: 'n', answer: [1] },
      { prompt: null, info: Object.create(null) },
      { prompt: undefined },
      {},
      { prompt: 3 },
      { prompt: null, idx: 1.5 },
      { prompt: null, idx: 2 ** 53 },
      { prompt: null, info: [] },
      { prompt: null, info: new Map() },
      { prompt: null, info: { [Symbol('s')]: 1 } },
      { prompt: null, systemPrompt: null },
      { prompt: null, workdir: 5 },
      { prompt: [{ role: 'user', content: 'hi' }] },
      { prompt: [{ role: 'nobody', content: 'hi' }] },
      { prompt: null, timeout: { agent: 0 } },
      Object.assign(Object.create({ inherited: 1 }), { prompt: 'p' }),
    ];
    for (const data of cases) {
      const schema = TaskDataSchema.safeParse(data).success;
      let made = true;
      try {
        new Task(data as TaskData);
      } catch {
        made = false;
      }
      expect([data, made]).toEqual([data, schema]);
      const base = new Task<TaskData>({ prompt: 'p' });
      let patched = true;
      try {
        base.with(data as Partial<TaskData>);
      } catch {
        patched = false;
      }
      // A patch may leave out `prompt` (the base has one); otherwise the same verdict.
      const merged = TaskDataSchema.safeParse({ prompt: 'p', ...(data as object) }).success;
      expect([data, patched]).toEqual([data, merged]);
    }
  });
});
