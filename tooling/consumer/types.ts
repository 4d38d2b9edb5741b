// Consumer check (c): the public types, type-checked with tsc --strict under nodenext and bundler.
import { type Algorithm, createAlgorithm } from '@troupe/prime-rl';
import { defineEnv, type EnvDefinition, Episode, Task, Taskset, type Trace } from '@troupe/verifiers';
import { ScriptedModelServer } from '@troupe/verifiers/testing';

const definition: EnvDefinition<'solver' | 'judge'> = defineEnv({
  id: 'typed',
  roles: { solver: { harness: 'bash' }, judge: { harness: 'null', trainable: false } },
  async run({ task, agents }) {
    const trace: Trace = await agents.solver.run(task);
    trace.recordReward('length', trace.lastReply.length > 0 ? 1 : 0);
  },
});
const algorithm: Algorithm = createAlgorithm({ type: 'grpo' });
const taskset: Taskset = Taskset.fromTasks('t', [new Task({ prompt: 'hi' })]);
export const checks: [typeof definition, Algorithm, Taskset, typeof Episode, typeof ScriptedModelServer] = [
  definition,
  algorithm,
  taskset,
  Episode,
  ScriptedModelServer,
];
