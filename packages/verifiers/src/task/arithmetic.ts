import { seededRandom } from '../util/random.ts';
import { Task } from './task.ts';
import { Taskset } from './taskset.ts';

/**
 * The data of an `arithmetic` task: the question and its integer answer (the reward compares the
 * reply's last integer).
 */
export interface ArithmeticTaskData extends Record<string, unknown> {
  prompt: string;
  answer: number;
}

/** The last integer in a text (commas removed), or null. */
export function lastInteger(text: string): number | null {
  const matches = text.replace(/,/g, '').match(/-?\d+/g);
  if (!matches?.length) return null;
  const value = Number(matches[matches.length - 1]);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * The built-in example taskset: small arithmetic with integer answers, reward `correct` = the
 * last integer of the reply equals the answer. `size` tasks made from seeds 0..size-1.
 */
export function arithmeticTaskset(options: { size?: number; seed?: number } = {}): Taskset<ArithmeticTaskData> {
  const size = options.size ?? 100;
  const base = options.seed ?? 0;
  const tasks = Array.from({ length: size }, (_, i) => {
    const random = seededRandom(base * 1_000_003 + i);
    const a = 2 + Math.floor(random() * 98);
    const b = 2 + Math.floor(random() * 98);
    const c = 2 + Math.floor(random() * 9);
    const op = Math.floor(random() * 3);
    const [text, answer] =
      op === 0
        ? [`${a} + ${b} * ${c}`, a + b * c]
        : op === 1
          ? [`(${a} - ${b}) * ${c}`, (a - b) * c]
          : [`${a} * ${b} - ${c}`, a * b - c];
    return new Task<ArithmeticTaskData>(
      { idx: i, name: `arithmetic-${base}-${i}`, prompt: `What is ${text}? End your reply with just the final integer.`, answer },
      {
        key: `arithmetic-${base}-${i}`,
        type: 'arithmetic',
        rewards: [{ name: 'correct', fn: ({ task, trace }) => (lastInteger(trace.lastReply) === task.data.answer ? 1 : 0) }],
      },
    );
  });
  return Taskset.fromTasks('arithmetic', tasks);
}
