// A user's own env, not in the registry: one seat is told a colour and earns 1 for replying it.
import { defineEnv, Task, Taskset } from '@troupe/verifiers';

const COLORS = ['red', 'green', 'blue'] as const;

/** `say-color`: task i asks for colour i mod 3; reward `said` = the reply is that colour. */
export const sayColorEnv = defineEnv({
  id: 'say-color',
  roles: { speaker: {} },
  taskset: () =>
    Taskset.generate('say-color', (i) => {
      const color = COLORS[i % COLORS.length] as string;
      return new Task(
        { idx: i, prompt: `say ${color}` },
        {
          key: `say-${i}`,
          type: 'say-color',
          rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply.trim() === color ? 1 : 0) }],
        },
      );
    }),
  async run({ task, agents }) {
    await agents.speaker.run(task);
  },
});
