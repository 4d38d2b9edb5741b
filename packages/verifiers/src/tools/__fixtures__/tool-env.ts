import { z } from 'zod';
import { defineEnv } from '../../env/env.ts';
import { Task } from '../../task/task.ts';
import { Taskset } from '../../task/taskset.ts';
import { defineTool } from '../mcp-server.ts';

/**
 * An env whose taskset declares tools (issue 17 item 2, the eval-wide door check): a solver
 * (default harness `bash`, which supports MCP) and a critic (`null`, which does not). Task 0 has
 * no tools; task 1, `needs-add`, declares one.
 */
const add = defineTool({
  name: 'add',
  description: 'adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => String(a + b),
});

export default defineEnv({
  id: 'tool-fixture',
  roles: { solver: { harness: 'bash' }, critic: { harness: 'null' } },
  taskset: () =>
    Taskset.fromTasks('tool-fixture-tasks', [
      new Task({ prompt: 'Say hi.' }, { key: 'plain' }),
      new Task({ prompt: 'Add 2 and 40.' }, { key: 'needs-add', tools: [add] }),
    ]),
  async run({ task, agents }) {
    await agents.solver.run(task);
  },
});
