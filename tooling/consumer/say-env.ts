// Consumer check (f): a user's own env in TypeScript, trained with `npx troupe train`. One seat is
// told a colour and earns 1 for replying it. Option `fail = "some"` throws in one task of ten and
// `fail = "all"` in every task (the run then exits 3, or 4, naming this file and line).
import { defineEnv, Task, Taskset } from '@troupe/verifiers';
import { z } from 'zod';

const COLOURS = ['red', 'green', 'blue'];

export const env = defineEnv({
  id: 'say-colour',
  roles: { speaker: {} },
  options: z.object({ fail: z.enum(['some', 'all']).optional() }),
  taskset: () =>
    Taskset.generate('say-colour', (i) => {
      const colour = COLOURS[i % COLOURS.length] as string;
      const said = {
        name: 'said',
        fn: ({ trace }: { trace: { lastReply: string } }) => (trace.lastReply.trim() === colour ? 1 : 0),
      };
      return new Task({ idx: i, prompt: `say ${colour}` }, { key: `say-colour-${i}`, rewards: [said] });
    }),
  async run({ task, agents, options }) {
    const idx = Number(task.data.idx);
    const fails = options.fail === 'all' || (options.fail === 'some' && idx % 10 === 3);
    if (fails) throw new Error(`the user's env failed on task ${idx}`);
    await agents.speaker.run(task);
  },
});
