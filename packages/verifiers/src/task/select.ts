import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { seededRandom } from '../util/random.ts';
import type { Task, TaskData } from './task.ts';
import type { Taskset } from './taskset.ts';

/** Largest number of task indexes one `indices` range list may name (an endless taskset has no end). */
const MAX_SELECTED_INDICES = 1_000_000;

/**
 * Which tasks of a taskset a run covers (`[select]` in a config, `--select K=V` on the CLI):
 * positions (`indices = "0-9,20"`), task keys, task types, and a seeded sample of what is left.
 * Stored in the run's `config.json`, so `--resume` and `replay` cover the same subset.
 */
export const TaskSelectionSchema = z
  .object({
    /** Positions in the taskset, from 0: a comma list of `N` and `A-B` (inclusive), in the order given. */
    indices: z.string().min(1).optional(),
    /** Task keys to keep; each must exist. */
    keys: z.array(z.string().min(1)).min(1).optional(),
    /** Task types to keep (`Task.type`). */
    types: z.array(z.string().min(1)).min(1).optional(),
    /** Keep this many of the tasks left, drawn with `seed` (in taskset order). */
    sample: z.number().int().positive().optional(),
    /** Seed of `sample` (default 0). */
    seed: z.number().int().nonnegative().default(0),
  })
  .strict();
/** A parsed {@link TaskSelectionSchema}. */
export type TaskSelection = z.output<typeof TaskSelectionSchema>;

/** `"0-3,7"` → `[0, 1, 2, 3, 7]`; a malformed or reversed range is a `ConfigError` naming it. */
export function parseIndexList(text: string): number[] {
  const indices: number[] = [];
  for (const part of text.split(',')) {
    const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!match) throw new ConfigError(`select.indices: ${JSON.stringify(part)} is not N or A-B (e.g. "0-9,20")`);
    const from = Number(match[1]);
    const to = match[2] === undefined ? from : Number(match[2]);
    if (to < from) throw new ConfigError(`select.indices: ${part.trim()} runs backwards`);
    if (indices.length + (to - from + 1) > MAX_SELECTED_INDICES)
      throw new ConfigError(`select.indices: more than ${MAX_SELECTED_INDICES} indexes`);
    for (let i = from; i <= to; i++) indices.push(i);
  }
  return indices;
}

/**
 * The tasks a run covers: the selected positions (or the whole taskset, or its first `numTasks`
 * when it is endless), kept by key and type, then sampled; `numTasks` caps what is left. Every
 * refusal names the field: an index past the end, a key the taskset lacks, a selection that keeps
 * nothing, an endless taskset with neither `indices` nor `numTasks`.
 */
export function selectTasks<D extends TaskData>(
  taskset: Taskset<D>,
  selection: TaskSelection | undefined,
  numTasks?: number,
): Task<D>[] {
  let tasks = basePositions(taskset, selection, numTasks);
  if (selection?.keys) {
    const wanted = new Set(selection.keys);
    const found = new Set(tasks.map((task) => task.key));
    const missing = selection.keys.filter((key) => !found.has(key));
    if (missing.length > 0)
      throw new ConfigError(`select.keys: taskset ${taskset.id} has no task ${missing.map((k) => JSON.stringify(k)).join(', ')}`);
    tasks = tasks.filter((task) => wanted.has(task.key));
  }
  if (selection?.types) {
    const wanted = new Set(selection.types);
    tasks = tasks.filter((task) => wanted.has(task.type));
    if (tasks.length === 0)
      throw new ConfigError(`select.types: no task of taskset ${taskset.id} has type ${selection.types.join(' or ')}`);
  }
  if (selection?.sample !== undefined && selection.sample < tasks.length)
    tasks = sampleInOrder(tasks, selection.sample, selection.seed);
  if (numTasks !== undefined && numTasks < tasks.length) tasks = tasks.slice(0, numTasks);
  return tasks;
}

function basePositions<D extends TaskData>(
  taskset: Taskset<D>,
  selection: TaskSelection | undefined,
  numTasks?: number,
): Task<D>[] {
  if (selection?.indices !== undefined) {
    return parseIndexList(selection.indices).map((index) => {
      if (index >= taskset.size)
        throw new ConfigError(
          `select.indices: taskset ${taskset.id} has ${taskset.size} tasks (0 to ${taskset.size - 1}); ${index} is past its end`,
        );
      return taskset.at(index);
    });
  }
  if (!taskset.isInfinite) return taskset.toArray();
  if (numTasks === undefined) throw new ConfigError(`taskset ${taskset.id} is infinite: set num_tasks (-n) or select.indices`);
  // Filters and samples apply to the first `numTasks` of an endless taskset, so `numTasks` is spent here.
  return taskset.head(numTasks).toArray();
}

/** `count` of `tasks` drawn without replacement by a seeded Fisher–Yates, returned in their original order. */
function sampleInOrder<T>(tasks: T[], count: number, seed: number): T[] {
  const order = tasks.map((_, i) => i);
  const random = seededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order
    .slice(0, count)
    .sort((a, b) => a - b)
    .map((i) => tasks[i] as T);
}
