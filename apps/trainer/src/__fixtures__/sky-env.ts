// The vocabulary trap: the prompt never says the answer ("blue"), so a policy whose vocabulary is
// the prompts' words can never say it; each task declares it as data.answer.
import { defineEnv, Task, Taskset } from '@troupe/verifiers';

/** `sky`: "what colour is the sky", reward `said` = the reply is "blue". */
export const skyEnv = defineEnv({
  id: 'sky',
  roles: { speaker: {} },
  taskset: () =>
    Taskset.generate('sky', (i) => {
      const said = { name: 'said', fn: ({ trace }: { trace: { lastReply: string } }) => (trace.lastReply.trim() === 'blue' ? 1 : 0) };
      return new Task({ idx: i, prompt: 'what colour is the sky', answer: 'blue' }, { key: `sky-${i}`, rewards: [said] });
    }),
  async run({ task, agents }) {
    await agents.speaker.run(task);
  },
});
