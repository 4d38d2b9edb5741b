import { Task } from '../../../task/task.ts';
import { Taskset } from '../../../task/taskset.ts';

/** The six seed topics the proposer invents problems from. */
export const SEED_TOPICS = [
  { name: 'rates-and-mixtures', topic: 'rates and mixtures' },
  { name: 'number-theory', topic: 'number theory' },
  { name: 'combinatorics', topic: 'combinatorics' },
  { name: 'geometry', topic: 'geometry' },
  { name: 'probability', topic: 'probability' },
  { name: 'modular-arithmetic', topic: 'modular arithmetic' },
] as const;

/** The proposer's prompt for one seed topic. */
export function proposerPrompt(topic: string): string {
  return [
    `Invent one new, hard math word problem about ${topic} that has a single integer answer.`,
    'Construct it with code: choose the numbers programmatically, then verify the answer end to end by computing it in code (and check that the problem has exactly one answer). Do not guess.',
    'Do not reveal the solution or the working in the problem statement.',
    'End your reply with exactly one line of JSON and nothing after it:',
    '{"problem": "<the full problem statement>", "answer": <the integer answer>}',
  ].join('\n\n');
}

/** The data of a proposer's seed task: the instruction to propose a problem on `info.topic`. */
export interface SeedTaskData extends Record<string, unknown> {
  prompt: string;
  info: { topic: string };
}

/** `proposer-solver-seeds`: one proposer task per seed topic. */
export function proposerSolverSeeds(): Taskset<SeedTaskData> {
  return Taskset.fromTasks(
    'proposer-solver-seeds',
    SEED_TOPICS.map(
      ({ name, topic }, idx) =>
        new Task<SeedTaskData>({ idx, name, prompt: proposerPrompt(topic), info: { topic } }, { key: name, type: 'seed-topic' }),
    ),
  );
}
