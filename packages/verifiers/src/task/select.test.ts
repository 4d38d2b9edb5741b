import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/troupe-error.ts';
import { arithmeticTaskset } from './arithmetic.ts';
import { parseIndexList, selectTasks, TaskSelectionSchema } from './select.ts';
import { Task } from './task.ts';
import { Taskset } from './taskset.ts';

const keys = (tasks: Task[]) => tasks.map((task) => task.key);
const select = (raw: Record<string, unknown>) => TaskSelectionSchema.parse(raw);
const arithmetic = arithmeticTaskset({ size: 10 });

describe('task selection', () => {
  it('parses index lists of single indexes and inclusive ranges, in the order given', () => {
    expect(parseIndexList('0-2,7, 4')).toEqual([0, 1, 2, 7, 4]);
    expect(() => parseIndexList('3-1')).toThrow(/3-1 runs backwards/);
    expect(() => parseIndexList('a')).toThrow(ConfigError);
  });

  it('keeps the tasks at the selected positions and refuses an index past the end, naming the size', () => {
    expect(keys(selectTasks(arithmetic, select({ indices: '8-9,1' })))).toEqual([
      'arithmetic-0-8',
      'arithmetic-0-9',
      'arithmetic-0-1',
    ]);
    expect(() => selectTasks(arithmetic, select({ indices: '10' }))).toThrow(/has 10 tasks \(0 to 9\); 10 is past its end/);
  });

  it('keeps the named keys in taskset order and names a key the taskset lacks', () => {
    expect(keys(selectTasks(arithmetic, select({ keys: ['arithmetic-0-5', 'arithmetic-0-2'] })))).toEqual([
      'arithmetic-0-2',
      'arithmetic-0-5',
    ]);
    expect(() => selectTasks(arithmetic, select({ keys: ['arithmetic-0-2', 'nope'] }))).toThrow(
      /select\.keys: .* no task "nope"/,
    );
  });

  it('filters by type and refuses a type no task has', () => {
    const mixed = Taskset.fromTasks('mixed', [
      new Task({ prompt: 'a' }, { key: 'a', type: 'easy' }),
      new Task({ prompt: 'b' }, { key: 'b', type: 'hard' }),
      new Task({ prompt: 'c' }, { key: 'c', type: 'easy' }),
    ]);
    expect(keys(selectTasks(mixed, select({ types: ['easy'] })))).toEqual(['a', 'c']);
    expect(() => selectTasks(mixed, select({ types: ['medium'] }))).toThrow(/select\.types: no task .* has type medium/);
  });

  it('samples the same tasks for the same seed, in taskset order, and other tasks for another seed', () => {
    const first = keys(selectTasks(arithmetic, select({ sample: 4, seed: 7 })));
    expect(first).toHaveLength(4);
    expect(keys(selectTasks(arithmetic, select({ sample: 4, seed: 7 })))).toEqual(first);
    expect([...first].sort((a, b) => Number(a.split('-')[2]) - Number(b.split('-')[2]))).toEqual(first);
    const others = [1, 2, 3].map((seed) => keys(selectTasks(arithmetic, select({ sample: 4, seed }))).join());
    expect(others.some((other) => other !== first.join())).toBe(true);
  });

  it('caps the selection at numTasks, and needs indices or numTasks for an endless taskset', () => {
    expect(selectTasks(arithmetic, select({ indices: '0-9' }), 3)).toHaveLength(3);
    const endless = Taskset.generate(
      'endless',
      (i) => new Task({ prompt: `${i}` }, { key: `t${i}`, type: i % 2 ? 'odd' : 'even' }),
    );
    expect(() => selectTasks(endless, undefined)).toThrow(/infinite: set num_tasks/);
    expect(keys(selectTasks(endless, select({ indices: '5,1000' })))).toEqual(['t5', 't1000']);
    expect(keys(selectTasks(endless, select({ types: ['odd'] }), 6))).toEqual(['t1', 't3', 't5']);
  });

  it('refuses unknown selection fields by name', () => {
    expect(TaskSelectionSchema.safeParse({ index: '1' }).success).toBe(false);
  });
});
