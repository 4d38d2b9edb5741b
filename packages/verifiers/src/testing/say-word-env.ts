import type { AgentConfig } from '../agent/agent-config.ts';
import { defineEnv, type EnvDefinition } from '../env/env.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { Task } from '../task/task.ts';
import { Taskset } from '../task/taskset.ts';

/**
 * A one-seat env for tests that learn: task i (key `<id>-<i>`, type `<id>`) tells the `speaker`
 * seat to `say <word>`, word i mod `words.length`, and its reward `said` is 1 when the reply is
 * that word (trimmed), else 0. `speaker` is the seat's default agent config (default `{}`).
 */
export function sayWordEnv(options: {
  id: string;
  words: readonly string[];
  speaker?: AgentConfig;
}): EnvDefinition<'speaker', Record<string, never>> {
  const { id, words } = options;
  if (words.length === 0) throw new ConfigError('sayWordEnv: words must name at least one word');
  return defineEnv({
    id,
    roles: { speaker: options.speaker ?? {} },
    taskset: () =>
      Taskset.generate(id, (i) => {
        const word = words[i % words.length] as string;
        return new Task(
          { idx: i, prompt: `say ${word}` },
          {
            key: `${id}-${i}`,
            type: id,
            rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply.trim() === word ? 1 : 0) }],
          },
        );
      }),
    async run({ task, agents }) {
      await agents.speaker.run(task);
    },
  });
}
