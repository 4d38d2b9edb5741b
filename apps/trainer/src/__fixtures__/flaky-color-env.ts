// say-color whose env throws on every odd task: a run of it finishes with some
// episodes failed (exit 3).
import { defineEnv } from '@troupe/verifiers';
import { sayColorEnv } from './say-color-env.ts';

/** `flaky-color`: say-color, but an odd task idx throws in the env. */
export const flakyColorEnv = defineEnv({
  ...sayColorEnv,
  id: 'flaky-color',
  async run(context) {
    if (Number(context.task.data.idx) % 2 === 1) throw new Error(`flaky-color: task ${context.task.data.idx} fails`);
    await sayColorEnv.run(context);
  },
});
