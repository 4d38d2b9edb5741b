import { defineEnv } from '../../env.ts';

/** `single-agent`: one seat, `agent`, that runs the task. */
export const singleAgentEnv = defineEnv({
  id: 'single-agent',
  description: 'One agent runs each task.',
  roles: { agent: {} },
  async run({ task, agents }) {
    await agents.agent.run(task);
  },
});
