import type { Message } from '../../model/messages.ts';
import { KUHN_ACTIONS, KUHN_CARDS, type KuhnAction, type KuhnCard, kuhnLegalActions } from './game.ts';

/**
 * The rules a seat sees as its system prompt, kept compact (≈20 tokens) because every token is
 * paid for in training; the legal actions come with each turn message. The card is dealt into
 * the seat's system prompt.
 */
export function kuhnSystemPrompt(card: KuhnCard): string {
  return `Kuhn poker, ante 1, J < Q < K. Reply with exactly one bracketed action. Your card: ${card}.`;
}

/** "Betting so far: …. You are Player i. Your legal actions: [a] or [b]." */
export function kuhnTurnMessage(history: readonly KuhnAction[], player: 0 | 1): string {
  const [a, b] = kuhnLegalActions(history);
  const so = history.length ? history.join(', ') : 'none';
  return `Betting so far: ${so}. You are Player ${player}. Your legal actions: [${a}] or [${b}].`;
}

/** The re-ask sent once after an illegal or ambiguous reply. */
export function kuhnReaskMessage(history: readonly KuhnAction[]): string {
  const [a, b] = kuhnLegalActions(history);
  return `That is not a legal move. Reply with exactly one of [${a}] or [${b}].`;
}

/**
 * The messages a seat has seen when it reaches an information set, assuming its own earlier
 * replies were the bare bracketed action (how the trainer queries the policy table).
 */
export function kuhnInfoSetMessages(card: KuhnCard, history: readonly KuhnAction[]): Message[] {
  const player = (history.length % 2) as 0 | 1;
  const messages: Message[] = [{ role: 'system', content: kuhnSystemPrompt(card) }];
  if (player === 0 && history.length === 2) {
    messages.push({ role: 'user', content: kuhnTurnMessage([], 0) });
    messages.push({ role: 'assistant', content: `[${history[0]}]` });
  }
  messages.push({ role: 'user', content: kuhnTurnMessage(history, player) });
  return messages;
}

/** Every text the env can show a seat, plus the bracketed actions: the corpus a tokenizer is built from. */
export function kuhnPromptCorpus(): string[] {
  const histories: KuhnAction[][] = [[], ['check'], ['bet'], ['check', 'bet']];
  const out: string[] = [];
  for (const card of KUHN_CARDS) out.push(kuhnSystemPrompt(card));
  for (const h of histories) {
    out.push(kuhnTurnMessage(h, (h.length % 2) as 0 | 1));
    out.push(kuhnReaskMessage(h));
  }
  out.push(...KUHN_ACTIONS.map((a) => `[${a}]`));
  return out;
}

/**
 * Parses a reply: the bracketed words (`\[(\w+)\]`, lowercased) that are legal here. Exactly one
 * distinct legal action is a move; none or both is illegal / ambiguous (null).
 */
export function kuhnParseAction(reply: string, history: readonly KuhnAction[]): KuhnAction | null {
  const legal = new Set<string>(kuhnLegalActions(history));
  const named = new Set<string>();
  for (const match of reply.toLowerCase().matchAll(/\[(\w+)\]/g)) if (legal.has(match[1] as string)) named.add(match[1] as string);
  return named.size === 1 ? ([...named][0] as KuhnAction) : null;
}
