import { describe, expect, it } from 'vitest';
import type { Message } from '../model/messages.ts';
import type { ModelClient, ModelRequest, ModelResponse } from '../model/model-client.ts';
import { Task } from '../task/task.ts';
import { defineEnv, Env } from './env.ts';

/** An in-process client answering from a function (the HTTP path is tested with the scripted server). */
function functionClient(answer: (request: ModelRequest, index: number) => Partial<Message & { role: 'assistant' }>): ModelClient {
  let index = 0;
  return {
    model: 'test-model',
    async complete(request): Promise<ModelResponse> {
      const reply = answer(request, index++);
      return {
        id: `r${index}`,
        model: request.model,
        message: {
          role: 'assistant',
          content: reply.content ?? null,
          ...(reply.toolCalls ? { toolCalls: reply.toolCalls } : {}),
        },
        finishReason: reply.toolCalls?.length ? 'tool_calls' : 'stop',
        usage: { promptTokens: 10, completionTokens: 2 },
        promptTokenIds: [1, 2, 3],
        completionTokenIds: [4, 5],
        completionLogprobs: [-0.5, -0.25],
      };
    },
  };
}

const twoRoles = defineEnv({
  id: 'two-roles',
  roles: { writer: { harness: 'null' }, critic: { harness: 'null' } },
  setup({ agents }) {
    agents.critic.trainable = false;
  },
  async run({ task, agents }) {
    const draft = await agents.writer.run(task);
    await agents.critic.run(task.with({ prompt: `Critique: ${draft.lastReply}` }));
  },
  finalize({ episode }) {
    const [writer, critic] = episode.traces;
    writer?.recordReward('critic_liked', critic?.lastReply.includes('good') ? 1 : 0);
  },
});

describe('Env', () => {
  it('takes maxConcurrentAgents from the config, else the definition (null = unlimited), else 1', async () => {
    const client = functionClient(() => ({ content: 'x' }));
    const make = async (definition: number | null | undefined, config?: number | null) =>
      Env.create({
        definition: defineEnv({
          id: 'c',
          roles: { a: { harness: 'null' } },
          ...(definition !== undefined ? { maxConcurrentAgents: definition } : {}),
          async run({ task, agents }) {
            await agents.a.run(task);
          },
        }),
        config: { id: 'c', ...(config !== undefined ? { maxConcurrentAgents: config } : {}) },
        run: { model: 'm', client },
      });
    expect((await make(null)).maxConcurrentAgents).toBeNull();
    expect((await make(undefined)).maxConcurrentAgents).toBe(1);
    expect((await make(4)).maxConcurrentAgents).toBe(4);
    expect((await make(null, 2)).maxConcurrentAgents).toBe(2);
    expect((await make(3, null)).maxConcurrentAgents).toBeNull();
  });

  it('collects every agent run into the episode with its role name and trainable flag', async () => {
    const client = functionClient((request) => ({
      content: String(request.messages.at(-1)?.content).startsWith('Critique') ? 'good' : 'a poem',
    }));
    const env = await Env.create({ definition: twoRoles, config: { id: 'two-roles' }, run: { model: 'm', client } });
    const episode = await env.runEpisode({ task: new Task({ prompt: 'write' }), group: { id: 'g', index: 0 } });
    expect(episode.ok).toBe(true);
    expect(episode.traces.map((t) => [t.agent.name, t.agent.trainable])).toEqual([
      ['writer', true],
      ['critic', false],
    ]);
    expect(episode.traces[0]?.reward).toBe(1);
    expect(episode.traces[0]?.nodes.find((n) => n.sampled)?.tokenIds).toEqual([1, 2, 3, 4, 5]);
    expect(episode.traces[0]?.stopCondition).toBe('agent_completed');
  });

  it('refuses an unknown env option, naming the field', async () => {
    const client = functionClient(() => ({ content: 'x' }));
    await expect(
      Env.create({ definition: twoRoles, config: { id: 'two-roles', wat: 1 }, run: { model: 'm', client } }),
    ).rejects.toThrow(/env\.wat/);
    await expect(
      Env.create({ definition: twoRoles, config: { id: 'two-roles', writer: { maxTurns: -1 } }, run: { model: 'm', client } }),
    ).rejects.toThrow(/env\.writer\.maxTurns/);
    await expect(
      Env.create({ definition: twoRoles, config: { id: 'two-roles', harness: 'bash' }, run: { model: 'm', client } }),
    ).rejects.toThrow(/per role/);
  });

  it('throws a clear error for an unknown role', async () => {
    const bad = defineEnv({
      id: 'bad',
      roles: { solver: { harness: 'null' } },
      async run({ task, agents }) {
        await (agents as unknown as Record<string, { run: (t: Task) => Promise<unknown> }>).judge?.run(task);
      },
    });
    const env = await Env.create({
      definition: bad,
      config: { id: 'bad' },
      run: { model: 'm', client: functionClient(() => ({ content: 'x' })) },
    });
    const episode = await env.runEpisode({ task: new Task({ prompt: 'p' }), group: { id: 'g', index: 0 } });
    expect(episode.ok).toBe(false);
    expect(episode.errors[0]?.message).toMatch(/no role "judge"; roles: solver/);
  });

  it('records a failing finalize as an EnvError and keeps the partial episode', async () => {
    const failing = defineEnv({
      id: 'failing',
      roles: { agent: { harness: 'null' } },
      async run({ task, agents }) {
        await agents.agent.run(task);
      },
      finalize() {
        throw new Error('cannot score');
      },
    });
    const env = await Env.create({
      definition: failing,
      config: { id: 'failing' },
      run: { model: 'm', client: functionClient(() => ({ content: 'x' })) },
    });
    const episode = await env.runEpisode({ task: new Task({ prompt: 'p' }), group: { id: 'g', index: 0 } });
    expect(episode.ok).toBe(false);
    expect(episode.traces).toHaveLength(1);
    expect(episode.errors[0]).toMatchObject({ type: 'EnvError', stage: 'env' });
  });

  it('runs an interaction in strict alternation and lands the trace on close', async () => {
    const turnTaking = defineEnv({
      id: 'turns',
      roles: { agent: { harness: 'null', maxTurns: 2 } },
      async run({ task, agents }) {
        const chat = await agents.agent.interaction(task.with({ prompt: null }));
        await expect(chat.turn()).rejects.toThrow(/needs a message/);
        const first = await chat.turn('hello');
        expect(first.lastReply).toBe('reply 0');
        const second = await chat.turn('again');
        expect(second.terminated).toBe(false);
        const third = await chat.turn('and again');
        expect(third.terminated).toBe(true);
        await expect(chat.turn('more')).rejects.toThrow(/terminated/);
        await chat.close();
      },
    });
    const env = await Env.create({
      definition: turnTaking,
      config: { id: 'turns' },
      run: { model: 'm', client: functionClient((_, i) => ({ content: `reply ${i}` })) },
    });
    const episode = await env.runEpisode({ task: new Task({ prompt: 'p' }), group: { id: 'g', index: 0 } });
    expect(episode.errors).toEqual([]);
    const trace = episode.traces[0];
    expect(trace?.numTurns).toBe(2);
    expect(trace?.stopCondition).toBe('max_turns');
    expect(trace?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('stops a seat opened without a signal when the episode deadline passes (its model call is aborted)', async () => {
    let aborted: unknown;
    // A model call that never answers unless aborted: the seat outlives the episode otherwise.
    const hanging: ModelClient = {
      model: 'm',
      complete(_request, options) {
        return new Promise((_, reject) =>
          options?.signal?.addEventListener('abort', () => {
            aborted = options.signal?.reason;
            reject(options.signal?.reason);
          }),
        );
      },
    };
    const env = await Env.create({
      definition: defineEnv({
        id: 'slow',
        roles: { seat: { harness: 'null' } },
        async run({ task, agents }) {
          const chat = await agents.seat.interaction(task.with({ prompt: null }));
          await chat.turn('move?');
          await chat.close();
        },
      }),
      config: { id: 'slow', timeout: { episode: 0.05 } },
      run: { model: 'm', client: hanging },
    });
    const episode = await env.runEpisode({ task: new Task({ prompt: 'p' }), group: { id: 'g', index: 0 } });
    expect(episode.errors[0]?.type).toBe('TimeoutError');
    for (let i = 0; i < 100 && aborted === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    expect((aborted as Error)?.name).toBe('TimeoutError');
  });
});
