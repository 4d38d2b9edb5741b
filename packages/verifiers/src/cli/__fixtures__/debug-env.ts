import { defineEnv } from '../../env/env.ts';
import { Taskset } from '../../task/taskset.ts';

/**
 * The env `troupe debug`'s tests boot: two roles, each on a `local` runtime table (so a test can
 * point its `root` somewhere with `--set`). Each task's setup leaves `setup.txt` naming the task;
 * the setup of task 3 fails.
 */
export default defineEnv({
  id: 'debug-fixture',
  roles: {
    solver: { harness: 'null', runtime: { id: 'local' } },
    judge: { harness: 'null', runtime: { id: 'local' } },
  },
  taskset: () =>
    Taskset.fromArray('debug-fixture-tasks', [{ prompt: 'zero' }, { prompt: 'one' }, { prompt: 'two' }, { prompt: 'fail' }], {
      async setup({ task, sandbox }) {
        if (task.data.prompt === 'fail') throw new Error('the fixture setup fails for task 3');
        await sandbox?.writeFile('setup.txt', `set up task ${String(task.data.prompt)}\n`);
      },
    }),
  async run({ task, agents }) {
    await agents.solver.run(task);
  },
});
