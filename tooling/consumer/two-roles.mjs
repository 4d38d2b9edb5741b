// Consumer check (a): plain JavaScript, bare node. A two-role env made with defineEnv runs against
// the scripted model server on loopback; the Episode must carry both roles' traces.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineEnv, Env, OpenAICompatibleClient, runEval, Task, Taskset } from '@troupe/verifiers';
import { ScriptedModelServer } from '@troupe/verifiers/testing';

const server = await ScriptedModelServer.start({
  script: (request) => (String(request.messages.at(-1)?.content ?? '').startsWith('Rate') ? '7' : 'The answer is 4'),
});
try {
  const writerCritic = defineEnv({
    id: 'writer-critic',
    roles: { writer: { harness: 'null' }, critic: { harness: 'null', trainable: false } },
    async run({ task, agents }) {
      const draft = await agents.writer.run(task);
      const review = await agents.critic.run(task.derive({ prompt: `Rate 0-10:\n${draft.lastReply}` }));
      draft.recordReward('critic', Number(review.lastReply.match(/\d+/)?.[0] ?? 0) / 10);
    },
  });
  const client = new OpenAICompatibleClient({ baseUrl: server.baseUrl, apiKey: 'x', model: 'm' });
  const env = await Env.create({ definition: writerCritic, config: { id: 'writer-critic' }, run: { model: 'm', client } });
  const taskset = Taskset.fromTasks('one', [new Task({ prompt: 'What is 2+2?' })]);
  const outDir = join(process.cwd(), 'out-two-roles');
  await runEval({ env, taskset, outDir, model: 'm' });
  const episode = JSON.parse(readFileSync(join(outDir, 'traces.jsonl'), 'utf8').trim().split('\n')[0]);
  const roles = episode.traces.map((trace) => trace.agent.name).sort();
  if (roles.join(',') !== 'critic,writer') throw new Error(`expected writer and critic traces, got ${roles}`);
  const writer = episode.traces.find((trace) => trace.agent.name === 'writer');
  const critic = episode.traces.find((trace) => trace.agent.name === 'critic');
  if (!JSON.stringify(writer).includes('The answer is 4')) throw new Error('the writer trace lacks its reply');
  if (critic.agent.trainable !== false) throw new Error('the critic trace should be trainable=false');
  console.log(`(a) ok: episode with roles ${roles.join(' + ')}`);
} finally {
  await server.close();
}
