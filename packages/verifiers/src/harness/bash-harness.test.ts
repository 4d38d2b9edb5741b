import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleAgentEnv } from '../env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../env/env.ts';
import { Task } from '../task/task.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';

describe('bash harness', () => {
  let scripted: ScriptedClient;
  beforeAll(async () => {
    scripted = await scriptedClient({
      vllmTokens: true,
      script: (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'user') {
          return { toolCalls: [{ name: 'bash', arguments: { command: 'echo 42 > answer.txt && cat answer.txt' } }] };
        }
        if (last?.role === 'tool' && /stdout:\n<<<\S+\n42\n/.test(last.content)) return 'I wrote 42 to answer.txt. Done.';
        return `unexpected: ${JSON.stringify(last)}`;
      },
    });
  });
  afterAll(() => scripted.close());

  it('solves a file task in a local sandbox through the scripted model over HTTP, with token ids on the trace', async () => {
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'bash', runtime: 'local' } },
      run: { model: 'scripted-model', client: scripted.client },
    });
    const task = new Task(
      { prompt: 'Write the number 42 into answer.txt in your working directory.' },
      {
        rewards: [
          {
            name: 'file_written',
            needsSandbox: true,
            fn: async ({ sandbox }) => (new TextDecoder().decode(await sandbox!.readFile('answer.txt')).trim() === '42' ? 1 : 0),
          },
        ],
      },
    );
    const episode = await env.runEpisode({ task, group: { id: 'g', index: 0 } });
    const trace = episode.traces[0]!;
    expect(trace.errors).toEqual([]);
    expect(trace.reward).toBe(1);
    expect(trace.numTurns).toBe(2);
    expect(trace.tools.map((t) => t.name)).toEqual(['bash', 'edit']);
    const toolResult = trace.messages.find((m) => m.role === 'tool');
    expect(toolResult?.role === 'tool' && toolResult.content).toContain('exit code: 0');
    const sampled = trace.nodes.filter((n) => n.sampled);
    expect(sampled.every((n) => n.tokenIds && n.logprobs && n.mask)).toBe(true);
    // The second turn's prompt extends the first turn's prompt + completion: one token branch.
    expect(sampled[1]?.tokenParent).toBe(sampled[0]?.id);
    expect(trace.lastReply).toBe('I wrote 42 to answer.txt. Done.');
  });
});
