import { readFile } from 'node:fs/promises';
import { ConfigError } from '../errors/troupe-error.ts';
import { seededRandom } from '../util/random.ts';
import { Task, type TaskData, TaskDataSchema, type TaskOptions } from './task.ts';

type Source<D extends TaskData> = { kind: 'list'; tasks: Task<D>[] } | { kind: 'generator'; make: (index: number) => Task<D> };

/**
 * A set of tasks of one type: finite (an array, a JSONL file) or infinite (a seeded
 * generator, task i made from seed i). `head(n)` is lazy; `shuffle()` is deterministic.
 */
export class Taskset<D extends TaskData = TaskData> {
  readonly id: string;
  private readonly source: Source<D>;

  private constructor(id: string, source: Source<D>) {
    this.id = id;
    this.source = source;
    if (source.kind === 'list') {
      const seen = new Set<string>();
      for (const task of source.tasks) {
        if (seen.has(task.key)) throw new ConfigError(`taskset ${id}: duplicate task key ${JSON.stringify(task.key)}`);
        seen.add(task.key);
      }
    }
  }

  /** Tasks from data objects; `options` (rewards, hooks) apply to each. */
  static fromArray<D extends TaskData>(
    id: string,
    rows: D[],
    options: TaskOptions<D> | ((row: D, index: number) => TaskOptions<D>) = {},
  ): Taskset<D> {
    return new Taskset(id, {
      kind: 'list',
      tasks: rows.map((row, index) => {
        const o = typeof options === 'function' ? options(row, index) : options;
        return new Task<D>({ idx: index, ...row }, o);
      }),
    });
  }

  /** Tasks that already exist. */
  static fromTasks<D extends TaskData>(id: string, tasks: Task<D>[]): Taskset<D> {
    return new Taskset(id, { kind: 'list', tasks });
  }

  /** One task per non-empty line; a bad line is an error naming its line number. */
  static async fromJsonl<D extends TaskData>(
    id: string,
    path: string,
    options: TaskOptions<D> | ((row: D, index: number) => TaskOptions<D>) = {},
  ): Promise<Taskset<D>> {
    const text = await readFile(path, 'utf8');
    const rows: D[] = [];
    text.split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new ConfigError(`${path}:${i + 1}: not JSON (${(error as Error).message})`);
      }
      const parsed = TaskDataSchema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new ConfigError(`${path}:${i + 1}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
      }
      rows.push(value as D);
    });
    return Taskset.fromArray(id, rows, options);
  }

  /** An infinite taskset: `make(i)` builds task i (use `seededRandom(i)` for randomness). */
  static generate<D extends TaskData>(id: string, make: (index: number) => Task<D>): Taskset<D> {
    return new Taskset(id, { kind: 'generator', make });
  }

  get isInfinite(): boolean {
    return this.source.kind === 'generator';
  }

  /** Number of tasks (Infinity for a generator). */
  get size(): number {
    return this.source.kind === 'list' ? this.source.tasks.length : Number.POSITIVE_INFINITY;
  }

  /** The first `n` tasks (lazy for a generator). */
  head(n: number): Taskset<D> {
    if (!Number.isInteger(n) || n < 0) throw new ConfigError(`head(n): n must be a non-negative integer, got ${n}`);
    if (this.source.kind === 'list') return new Taskset(this.id, { kind: 'list', tasks: this.source.tasks.slice(0, n) });
    const make = this.source.make;
    return new Taskset(this.id, { kind: 'list', tasks: Array.from({ length: n }, (_, i) => make(i)) });
  }

  /** A deterministic shuffle (Fisher–Yates with a fixed seed, default 0). Errors when infinite. */
  shuffle(seed = 0): Taskset<D> {
    if (this.source.kind !== 'list')
      throw new ConfigError(`taskset ${this.id} is infinite and cannot be shuffled; take head(n) first`);
    const tasks = [...this.source.tasks];
    const random = seededRandom(seed);
    for (let i = tasks.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [tasks[i], tasks[j]] = [tasks[j] as Task<D>, tasks[i] as Task<D>];
    }
    return new Taskset(this.id, { kind: 'list', tasks });
  }

  /** Task i. */
  at(index: number): Task<D> {
    if (this.source.kind === 'generator') return this.source.make(index);
    const task = this.source.tasks[index];
    if (!task) throw new ConfigError(`taskset ${this.id} has no task ${index}`, { path: 'index' });
    return task;
  }

  *[Symbol.iterator](): Iterator<Task<D>> {
    if (this.source.kind === 'list') {
      yield* this.source.tasks;
      return;
    }
    for (let i = 0; ; i++) yield this.source.make(i);
  }

  /** All tasks as an array (errors when infinite). */
  toArray(): Task<D>[] {
    if (this.source.kind !== 'list') throw new ConfigError(`taskset ${this.id} is infinite; take head(n) first`);
    return [...this.source.tasks];
  }
}
