// Consumer check (b): a user's env module in plain JavaScript, for `troupe eval --env ./my-env.mjs`.
import { defineEnv } from '@troupe/verifiers';

export default defineEnv({
  id: 'my-env',
  roles: { solver: { harness: 'null' } },
  async run({ task, agents }) {
    await agents.solver.run(task);
  },
});
