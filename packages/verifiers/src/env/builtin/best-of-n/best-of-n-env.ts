import { z } from 'zod';
import { EnvError } from '../../../errors/troupe-error.ts';
import { defineEnv } from '../../env.ts';

/** Options of `best-of-n` (keys of `[env]`): attempts per episode and the pass threshold for pass@k. */
export const BestOfNOptionsSchema = z
  .object({
    /** Attempts per episode. */
    n: z.number().int().positive().default(4),
    /** Reward at or above which an attempt counts as a pass. */
    threshold: z.number().default(1),
  })
  .strict();

/**
 * `best-of-n`: `n` attempts of the same agent on one task. Metrics on every trace: `best`
 * (reward == max; ties share) and `pass_at_n` (max ≥ threshold). One failed attempt cancels
 * its siblings. Attempts run serially unless `maxConcurrentAgents` is raised.
 */
export const bestOfNEnv = defineEnv({
  id: 'best-of-n',
  description: 'n attempts per task; best and pass_at_n metrics.',
  roles: { agent: {} },
  options: BestOfNOptionsSchema,
  async run({ task, agents, options, signal }) {
    const controller = new AbortController();
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
    await Promise.all(
      Array.from({ length: options.n }, async () => {
        const trace = await agents.agent.run(task, { signal: controller.signal });
        if (!trace.ok && !controller.signal.aborted) controller.abort(new EnvError(`attempt ${trace.id} failed`));
      }),
    );
  },
  finalize({ episode, options }) {
    const attempts = episode.traces;
    if (attempts.length === 0) return;
    const best = Math.max(...attempts.map((t) => t.reward));
    for (const trace of attempts) {
      trace.recordMetric('best', trace.reward === best ? 1 : 0);
      trace.recordMetric('pass_at_n', best >= options.threshold ? 1 : 0);
    }
  },
});
