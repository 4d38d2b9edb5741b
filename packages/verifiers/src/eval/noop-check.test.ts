import { describe, expect, it } from 'vitest';
import { singleAgentEnv } from '../env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../env/env.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { Task } from '../task/task.ts';
import { Taskset } from '../task/taskset.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';
import { goldReply, goldScores, noopScores } from './noop-check.ts';

describe('noopScores', () => {
  it('flags the tasks that score >= 1 with an untouched workspace and an empty reply, and calls no model', async () => {
    let modelCalls = 0;
    const server = await ScriptedModelServer.start({
      script: () => {
        modelCalls++;
        return 'never';
      },
    });
    try {
      const client = new OpenAICompatibleClient({ baseUrl: server.baseUrl, apiKey: 'x', model: 'scripted' });
      const env = await Env.create({
        definition: singleAgentEnv,
        config: { id: 'single-agent', agent: { harness: 'bash' } },
        run: { model: 'scripted', client },
      });
      const taskset = Taskset.fromTasks('probe', [
        new Task({ prompt: 'always' }, { key: 'always', rewards: [{ name: 'free', fn: () => 1 }] }),
        new Task(
          { prompt: 'reply' },
          { key: 'reply', rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply === '42' ? 1 : 0) }] },
        ),
        new Task(
          { prompt: 'seeded' },
          {
            key: 'seeded',
            setup: async ({ sandbox }) => sandbox?.writeFile('answer.txt', '42'),
            rewards: [
              {
                name: 'file',
                needsSandbox: true,
                fn: async ({ sandbox }) =>
                  Buffer.from((await sandbox?.readFile('answer.txt')) ?? []).toString() === '42' ? 1 : 0,
              },
            ],
          },
        ),
        new Task(
          { prompt: 'broken' },
          {
            key: 'broken',
            rewards: [
              {
                name: 'throws',
                fn: () => {
                  throw new Error('no');
                },
              },
            ],
          },
        ),
      ]);
      const agent = env.baseAgents.agent;
      const scores = await noopScores({ agent, taskset });
      expect(scores.map((score) => [score.task, score.reward, score.solvedByNothing])).toEqual([
        ['always', 1, true],
        ['reply', 0, false],
        ['seeded', 1, true],
        ['broken', 0, false],
      ]);
      expect(scores[3]?.errors.join('\n')).toMatch(/throws: no/);
      expect(scores[3]?.rewards.throws).toBeNull();
      expect(modelCalls).toBe(0);
      expect((await noopScores({ agent, taskset, numTasks: 1 })).length).toBe(1);
      const selected = await noopScores({ agent, taskset, select: { keys: ['seeded', 'broken'], seed: 0 } });
      expect(selected.map((score) => score.task)).toEqual(['seeded', 'broken']);

      const graded = Taskset.fromTasks('gold', [
        new Task(
          { prompt: 'q', answer: 42 },
          { key: 'right', rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply === '42' ? 1 : 0) }] },
        ),
        new Task(
          { prompt: 'q', gold: 'forty-two', answer: 42 },
          { key: 'wrong', rewards: [{ name: 'said', fn: ({ trace }) => (trace.lastReply === '42' ? 1 : 0) }] },
        ),
        new Task({ prompt: 'q' }, { key: 'none', rewards: [{ name: 'said', fn: () => 0 }] }),
      ]);
      const gold = await goldScores({ agent, taskset: graded });
      expect(gold.map((score) => [score.task, score.reward, score.goldFails, score.goldMissing])).toEqual([
        ['right', 1, false, false],
        ['wrong', 0, true, false],
        ['none', 0, false, true],
      ]);
      expect(modelCalls).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('goldReply', () => {
  it('takes gold, else answer (a string or a finite number), else none', () => {
    expect(goldReply({ gold: 'g', answer: 'a' })).toBe('g');
    expect(goldReply({ answer: 7 })).toBe('7');
    expect(goldReply({ answer: Number.NaN })).toBeUndefined();
    expect(goldReply({ answer: { nested: true } })).toBeUndefined();
  });
});
