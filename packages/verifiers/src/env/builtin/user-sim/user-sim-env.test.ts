import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../model/model-client.ts';
import { Task } from '../../../task/task.ts';
import { type ScriptedClient, scriptedClient } from '../../../testing/scripted-model-server.ts';
import type { Episode } from '../../../trace/episode.ts';
import { Env } from '../../env.ts';
import { DEFAULT_DONE_MARKER } from './persona.ts';
import { userSimEnv } from './user-sim-env.ts';

type Role = (request: ModelRequest, turn: number) => string;
let model: ScriptedClient;
let roles: { user: Role; assistant: Role };

const systemOf = (request: ModelRequest) => {
  const first = request.messages[0];
  return first?.role === 'system' ? first.content : '';
};

beforeAll(async () => {
  model = await scriptedClient({
    script: (request) => {
      const turn = request.messages.filter((m) => m.role === 'assistant').length;
      return systemOf(request).includes('role-playing a user') ? roles.user(request, turn) : roles.assistant(request, turn);
    },
  });
});
afterAll(() => model.close());

const scenario = 'Your order #5521 arrived broken. You want a refund, not a replacement. Only give the order number when asked.';
const refundTask = () =>
  new Task(
    { prompt: scenario, info: { order: 5521 } },
    {
      rewards: [
        {
          name: 'refunded',
          fn: ({ trace }) =>
            trace.messages.some((m) => m.role === 'assistant' && String(m.content).includes('refund for order 5521')) ? 1 : 0,
        },
      ],
    },
  );

async function episode(options: { user: Role; assistant: Role; config?: Record<string, unknown> }): Promise<Episode> {
  roles = { user: options.user, assistant: options.assistant };
  const env = await Env.create({
    definition: userSimEnv,
    config: { id: 'user-sim', assistant: { harness: 'null' }, ...options.config },
    run: { model: 'policy-model', client: model.client },
  });
  return env.runEpisode({ task: refundTask(), group: { id: 'g', index: 0 } });
}

const byRole = (result: Episode) => ({
  user: result.traces.find((t) => t.agent.name === 'user'),
  assistant: result.traces.find((t) => t.agent.name === 'assistant'),
});

describe('user-sim', () => {
  it('runs the conversation until the user says the done marker and scores the assistant by the task', async () => {
    let userSystem = '';
    const result = await episode({
      user: (request, turn) => {
        userSystem = systemOf(request);
        return ['My blender arrived broken, I want my money back.', 'It is order 5521.', DEFAULT_DONE_MARKER][turn] ?? 'hm';
      },
      assistant: (_request, turn) =>
        ['Sorry to hear that! What is the order number?', 'Done: I issued a refund for order 5521.'][turn] ?? 'ok',
    });
    expect(result.errors).toEqual([]);
    const { user, assistant } = byRole(result);
    // The user's hidden situation and the done marker are in its persona, never shown to the assistant.
    expect(userSystem).toContain(scenario);
    expect(userSystem).toContain(`reply with exactly ${DEFAULT_DONE_MARKER}`);
    expect(user?.messages[1]).toEqual({ role: 'user', content: 'Hello! How can I help you today?' });
    expect(JSON.stringify(assistant?.messages)).not.toContain('Only give the order number');
    expect(assistant?.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'My blender arrived broken, I want my money back.'],
      ['assistant', 'Sorry to hear that! What is the order number?'],
      ['user', 'It is order 5521.'],
      ['assistant', 'Done: I issued a refund for order 5521.'],
    ]);
    expect(assistant?.rewards.refunded).toEqual({ score: 1, weight: 1 });
    expect(assistant?.metrics.user_turns).toBe(3);
    expect(assistant?.agent.trainable).toBe(true);
    expect(user?.agent.trainable).toBe(false);
    expect(user?.rewards).toEqual({});
  });

  it('stops at 8 user turns when the user never says the marker', async () => {
    const result = await episode({
      user: (_r, turn) => `still not happy (${turn})`,
      assistant: (_r, turn) => `let me check (${turn})`,
    });
    expect(result.errors).toEqual([]);
    const { user, assistant } = byRole(result);
    expect(user?.numTurns).toBe(8);
    expect(user?.stopCondition).toBe('max_turns');
    expect(assistant?.numTurns).toBe(8);
    expect(assistant?.metrics.user_turns).toBe(8);
    expect(assistant?.rewards.refunded).toEqual({ score: 0, weight: 1 });
  });

  it('ends when the assistant segment terminates (its own turn limit)', async () => {
    const result = await episode({
      user: (_r, turn) => `question ${turn}`,
      assistant: (_r, turn) => `answer ${turn}`,
      config: { assistant: { harness: 'null', maxTurns: 2 } },
    });
    const { user, assistant } = byRole(result);
    expect(assistant?.numTurns).toBe(2);
    expect(assistant?.stopCondition).toBe('max_turns');
    expect(user?.numTurns).toBe(3);
    expect(assistant?.metrics.user_turns).toBe(3);
  });

  it('takes a custom persona and done marker', async () => {
    let userSystem = '';
    const result = await episode({
      user: (request, turn) => {
        userSystem = systemOf(request);
        return turn === 0 ? 'hi' : 'BYE';
      },
      assistant: () => 'hello',
      config: { persona: 'You are role-playing a user. Situation: {scenario} Say {done} to leave.', doneMarker: 'BYE' },
    });
    expect(userSystem).toBe(`You are role-playing a user. Situation: ${scenario} Say BYE to leave.`);
    expect(byRole(result).assistant?.metrics.user_turns).toBe(2);
  });
});
