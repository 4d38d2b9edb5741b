// The two-sides env with an evaluator that reads each seat from the policy the run gives that
// role: P(own side) for `left` and for `right`. A shared policy reads the same prompt for both, so
// the two probabilities sum to 1; one policy per seat can drive both towards 1.
import { twoSidesEnv } from './two-sides-env.ts';

type Readable = {
  replyProbabilities?(options: { messages: readonly { role: string; content: string }[]; replies: readonly string[] }): Promise<number[]>;
};

/** `two-sides`, as in two-sides-env.ts. */
export default twoSidesEnv;

/** One reply of the two sides, and the per-seat probe. */
export const training = {
  replyVocabulary: () => ['left', 'right'],
  evaluator: () => ({
    async evaluate({ policy, roles }: { policy: Readable; roles?: Readonly<Record<string, Readable>> }) {
      const metrics: Record<string, number> = {};
      for (const [index, seat] of ['left', 'right'].entries()) {
        const read = (roles?.[seat] ?? policy).replyProbabilities;
        if (!read) throw new Error(`${seat}: no reply probabilities`);
        const p = await read({ messages: [{ role: 'user', content: 'left or right' }], replies: ['left', 'right'] });
        metrics[`${seat}/own_side`] = p[index] as number;
      }
      return { metrics };
    },
  }),
};
