import { contentText, type Message } from '@troupe/verifiers';

/** The opening conversation as a program's command line takes it. */
export interface PromptParts {
  /** The system prompt, when the first message is one. */
  system?: string;
  /** Everything else as one text: a single user message verbatim, a longer history as labelled turns. */
  prompt: string;
}

/**
 * Splits launch messages into a system prompt and one prompt text. CLIs take a single task
 * string; an earlier history (rare for CLI tasks) is written out as `User:` / `Assistant:` turns.
 */
export function promptParts(messages: readonly Message[]): PromptParts {
  const rest = [...messages];
  const parts: PromptParts = { prompt: '' };
  if (rest[0]?.role === 'system') parts.system = rest.shift()?.content as string;
  if (rest.length === 1 && rest[0]?.role === 'user') {
    parts.prompt = contentText(rest[0].content);
    return parts;
  }
  parts.prompt = rest
    .map((message) => {
      if (message.role === 'user') return `User: ${contentText(message.content)}`;
      if (message.role === 'assistant') return `Assistant: ${message.content ?? ''}`;
      if (message.role === 'tool') return `Tool result: ${message.content}`;
      return `System: ${message.content}`;
    })
    .join('\n\n');
  return parts;
}

/** The prompt with the system prompt folded in front (for programs that take no system prompt). */
export function foldedPrompt(parts: PromptParts): string {
  return parts.system ? `${parts.system}\n\n${parts.prompt}` : parts.prompt;
}
