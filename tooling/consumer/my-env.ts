// Consumer check (b): the same env in TypeScript, for `troupe eval --env ./my-env.ts`.
import { defineEnv, type EnvDefinition } from '@troupe/verifiers';

export const env: EnvDefinition<'solver'> = defineEnv({
  id: 'my-env-ts',
  roles: { solver: { harness: 'null' } },
  async run({ task, agents }) {
    await agents.solver.run(task);
  },
});
