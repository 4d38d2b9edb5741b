// A user's own env with reference replies: task i asks for colour i mod 3 and holds it as `answer`.
import { defineEnv, Task, Taskset } from '@troupe/verifiers';

const words = ['red', 'green', 'blue'];

/** `answer-color`: task i says "say <colour>", `answer` = the colour; reward `said` = the reply is it. */
export const answerColorEnv = defineEnv({
  id: 'answer-color',
  roles: { speaker: {} },
  taskset: () =>
    Taskset.generate('answer-color', (i) => {
      const word = words[i % words.length] as string;
      return new Task(
        { idx: i, prompt: `say ${word}`, answer: word },
        {
          key: `answer-color-${i}`,
          type: 'answer-color',
          rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply.trim() === word ? 1 : 0) }],
        },
      );
    }),
  async run({ task, agents }) {
    await agents.speaker.run(task);
  },
});
