import type { AssistantMessage, Message } from '../model/messages.ts';
import { canonicalJson } from '../util/hash.ts';

/**
 * A deterministic stand-in tokenizer for tests of trainable traces: one token per
 * whitespace-separated word (a stable hash), role markers around messages. A prompt rendered for
 * turn n+1 starts with turn n's prompt + completion tokens, as a real chat template would, so
 * token bridging across turns can be tested without a real tokenizer.
 */
export const SCRIPTED_TOKENS = {
  system: 1,
  user: 2,
  assistant: 3,
  tool: 4,
  end: 5,
  toolCall: 6,
  image: 7,
} as const;

/** The stable id of one word (FNV-1a, folded into [1000, 51000)). */
export function wordTokenId(word: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    hash ^= word.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return 1000 + (hash % 50_000);
}

function words(text: string, out: number[]): void {
  for (const word of text.split(/\s+/)) if (word) out.push(wordTokenId(word));
}

function canonicalArguments(text: string): string {
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return text;
  }
}

/** The tokens of a message's body (without role marker and end token). */
export function messageBodyTokens(message: Message): number[] {
  const out: number[] = [];
  switch (message.role) {
    case 'user':
      if (typeof message.content === 'string') words(message.content, out);
      else for (const part of message.content) part.type === 'text' ? words(part.text, out) : out.push(SCRIPTED_TOKENS.image);
      break;
    case 'assistant':
      words(message.content ?? '', out);
      for (const call of message.toolCalls ?? []) {
        out.push(SCRIPTED_TOKENS.toolCall);
        words(call.name, out);
        words(canonicalArguments(call.arguments), out);
      }
      break;
    default:
      words(message.content, out);
  }
  return out;
}

/** Prompt tokens: every message as `[role, …body, end]`, then the assistant marker. */
export function scriptedPromptTokens(messages: Message[]): number[] {
  const out: number[] = [];
  for (const message of messages) {
    out.push(SCRIPTED_TOKENS[message.role]);
    for (const token of messageBodyTokens(message)) out.push(token);
    out.push(SCRIPTED_TOKENS.end);
  }
  out.push(SCRIPTED_TOKENS.assistant);
  return out;
}

/** Completion tokens of a reply: its body, then the end token. */
export function scriptedCompletionTokens(message: AssistantMessage): number[] {
  return [...messageBodyTokens(message), SCRIPTED_TOKENS.end];
}

/** A deterministic logprob for a token id (in (-1, 0]). */
export function scriptedLogprob(tokenId: number): number {
  return -((tokenId % 997) / 1000);
}
