import { z } from 'zod';
import { Task } from '../../../task/task.ts';
import { defineEnv } from '../../env.ts';
import { ASSISTANT_GREETING, DEFAULT_DONE_MARKER, DEFAULT_PERSONA, personaPrompt } from './persona.ts';

/** Options of `user-sim` (keys of `[env]`). */
export const UserSimOptionsSchema = z
  .object({
    /** The user's system prompt; `{scenario}` = the task prompt, `{done}` = the done marker. */
    persona: z.string().min(1).default(DEFAULT_PERSONA),
    /** The user's whole reply that ends the conversation. */
    doneMarker: z.string().min(1).default(DEFAULT_DONE_MARKER),
  })
  .strict();
/** The options of `user-sim` after parsing (default persona and done marker); see {@link UserSimOptionsSchema}. */
export type UserSimOptions = z.output<typeof UserSimOptionsSchema>;

/**
 * `user-sim`: a simulated user (frozen, `null` harness, at most 8 turns) holds the task's prompt
 * as its hidden situation; the assistant gets the same task with no prompt and must find out
 * what is wanted by talking. The assistant's trace is scored by the task's own rewards; metric
 * `user_turns` counts the user's turns.
 */
export const userSimEnv = defineEnv({
  id: 'user-sim',
  description: 'A simulated user with a hidden situation talks to the assistant until it says the done marker.',
  roles: { assistant: {}, user: { harness: 'null', maxTurns: 8, trainable: false } },
  options: UserSimOptionsSchema as unknown as z.ZodType<UserSimOptions>,
  setup({ agents }) {
    agents.user.trainable = false;
  },
  async run({ task, agents, options, signal }) {
    const userTask = new Task(
      {
        name: `user:${task.key}`,
        prompt: null,
        systemPrompt: personaPrompt({ persona: options.persona, scenario: task.promptText, done: options.doneMarker }),
      },
      { key: `user:${task.key}`, type: 'simulated-user' },
    );
    const assistantTask = task.with({ prompt: null });
    const user = await agents.user.interaction(userTask, { signal });
    try {
      const assistant = await agents.assistant.interaction(assistantTask, { signal });
      try {
        let ask = await user.turn(ASSISTANT_GREETING);
        while (!ask.terminated && ask.lastReply !== options.doneMarker) {
          const answer = await assistant.turn(ask.lastReply);
          if (answer.terminated) break;
          ask = await user.turn(answer.lastReply);
        }
      } finally {
        await assistant.close();
      }
    } finally {
      await user.close();
    }
  },
  finalize({ episode }) {
    const user = episode.traces.find((t) => t.agent.name === 'user');
    const assistant = episode.traces.find((t) => t.agent.name === 'assistant');
    if (user && assistant) assistant.recordMetric('user_turns', user.numTurns);
  },
});
