// A user's own two-role env, not in the registry: both seats read the same prompt, and each is
// paid for its own answer — `left` for replying "left", `right` for "right". One shared policy
// cannot serve both (the prompt is the same); two policies, one per seat, can.
import { defineEnv, Task, Taskset } from '@troupe/verifiers';

const said = (word: string) => ({
  name: 'said',
  fn: ({ trace }: { trace: { lastReply: string } }) => (trace.lastReply.trim() === word ? 1 : 0),
});

/** The two-sides env in which seat `left` sits out the tasks whose index `leftSitsOut` names (no trace of it there). */
export function twoSidesEnvWhere(options: { leftSitsOut: (idx: number) => boolean }) {
  return defineEnv({
    id: 'two-sides',
    roles: { left: {}, right: {} },
    taskset: () =>
      Taskset.generate('two-sides', (i) => new Task({ idx: i, prompt: 'left or right' }, { key: `two-sides-${i}` })),
    async run({ task, agents }) {
      if (!options.leftSitsOut(Number(task.data.idx)))
        await agents.left.run(task.derive({}, { rewards: [said('left')] }));
      await agents.right.run(task.derive({}, { rewards: [said('right')] }));
    },
  });
}

/** `two-sides`: seats `left` and `right` each earn `said` = 1 for replying their own side. */
export const twoSidesEnv = twoSidesEnvWhere({ leftSitsOut: () => false });

/** The embedded policy replies one of the two sides. */
export const training = { replyVocabulary: () => ['left', 'right'] };
