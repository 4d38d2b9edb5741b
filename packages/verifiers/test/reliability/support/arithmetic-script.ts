import { contentText } from '../../../src/model/messages.ts';
import type { ModelRequest } from '../../../src/model/model-client.ts';
import { lastInteger } from '../../../src/task/arithmetic.ts';
import { Task } from '../../../src/task/task.ts';
import { Taskset } from '../../../src/task/taskset.ts';

/** Task `i` of the reliability taskset: a unique prompt, so requests can be mapped back to tasks. */
export function reliabilityTask(index: number): Task {
  const a = 3 + ((index * 7) % 90);
  const b = 2 + ((index * 13) % 50);
  return new Task(
    { idx: index, prompt: `Task ${index}: What is ${a} + ${b}? End with the integer.`, answer: a + b },
    {
      key: `reliability-${index}`,
      rewards: [{ name: 'correct', fn: ({ trace }) => (lastInteger(trace.lastReply) === a + b ? 1 : 0) }],
    },
  );
}

/** `size` reliability tasks. */
export function reliabilityTaskset(size: number): Taskset {
  return Taskset.fromTasks(
    'reliability',
    Array.from({ length: size }, (_, i) => reliabilityTask(i)),
  );
}

/** The task index a request is about (from `Task N:` in its first user message), or null. */
export function taskIndexOf(request: ModelRequest): number | null {
  for (const message of request.messages) {
    if (message.role !== 'user') continue;
    const match = contentText(message.content).match(/Task (\d+):/);
    if (match) return Number(match[1]);
  }
  return null;
}

/** The correct answer to a reliability or arithmetic prompt (`What is <expr>?`), as a reply. */
export function answerOf(request: ModelRequest): string {
  const user = request.messages.findLast((m) => m.role === 'user');
  const text = user ? contentText(user.content) : '';
  const expression = text.match(/What is ([-+*() 0-9]+)\?/)?.[1];
  if (!expression) return 'I do not know. 0';
  // The expression is matched against digits, spaces, parentheses and + - * only.
  return `The answer is ${Function(`return (${expression})`)() as number}`;
}
