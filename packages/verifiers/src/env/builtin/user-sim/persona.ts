/** The marker the simulated user replies with, alone, to end the conversation. */
export const DEFAULT_DONE_MARKER = '###DONE###';

/** What the user hears first, as if the assistant had opened. */
export const ASSISTANT_GREETING = 'Hello! How can I help you today?';

/**
 * The default persona: `{scenario}` becomes the task's prompt (the user's hidden situation) and
 * `{done}` the done marker.
 */
export const DEFAULT_PERSONA = `You are role-playing a user who is talking to an AI assistant. You are the user, not the assistant.

Your situation (hidden from the assistant; it only learns what you tell it):
{scenario}

Rules:
- Open with your request, in your own words, as this user would.
- Stay in character. Keep each message short, like a real person typing to an assistant.
- Never do the task yourself: the assistant does all the work (every tool call, answer and format is its job, not yours).
- Reveal details of your situation only when the assistant asks for them, or when they become relevant.
- When your goal is met, or you are sure the assistant cannot meet it, reply with exactly {done} and nothing else.`;

/** Fills `{scenario}` and `{done}` in a persona (every occurrence). */
export function personaPrompt(options: { persona: string; scenario: string; done: string }): string {
  return options.persona.replaceAll('{scenario}', options.scenario).replaceAll('{done}', options.done);
}
