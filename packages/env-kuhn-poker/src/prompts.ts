import type { Message } from '@troupe/verifiers';
import {
  KUHN_ACTIONS,
  KUHN_CARDS,
  type KuhnAction,
  type KuhnCard,
  kuhnIsTerminal,
  kuhnLegalActions,
  legalActionsOf,
} from './game.ts';

/**
 * How the env words its messages. `rules` (default) states the rules, the seat and the legal
 * actions in sentences (for LLM seats); `compact` says only what a policy needs — its card, the
 * betting so far and the two legal actions — in ≈10 tokens per message, because a trained policy
 * pays for every prompt token in inference and training. Both name the legal actions in brackets
 * and are parsed the same way.
 */
export type KuhnPromptStyle = 'rules' | 'compact' | 'pass-bet';

/**
 * The word a style uses for an action. `pass-bet` names the two canonical Kuhn actions at every
 * decision — `pass` (check, or fold facing a bet) and `bet` (bet, or call facing a bet) — so a
 * policy's reply vocabulary is two tokens, both legal everywhere (the others name all four).
 */
export function kuhnActionWord(action: KuhnAction, style: KuhnPromptStyle = 'rules'): string {
  if (style !== 'pass-bet') return action;
  return action === 'check' || action === 'fold' ? 'pass' : 'bet';
}

/** The reply words a style offers: `pass` and `bet` (`pass-bet`), else the four actions. */
export function kuhnReplyWords(style: KuhnPromptStyle = 'rules'): readonly string[] {
  return style === 'pass-bet' ? ['pass', 'bet'] : KUHN_ACTIONS;
}

/** The action a word names among the `legal` two: `pass`/`bet` by position, any other word as itself. */
function actionOfWord(word: string, legal: readonly [KuhnAction, KuhnAction]): string {
  return word === 'pass' ? legal[0] : word === 'bet' ? legal[1] : word;
}

/** The two reply words offered after `history`: the legal actions, or `pass`/`bet`. */
function offered(history: readonly KuhnAction[], style: KuhnPromptStyle): [string, string] {
  const [a, b] = kuhnLegalActions(history) as [KuhnAction, KuhnAction];
  return [kuhnActionWord(a, style), kuhnActionWord(b, style)];
}

/**
 * The seat's system prompt: the rules (or, `compact`, just the game) and its card.
 * Both styles contain `Your card: X.`.
 */
export function kuhnSystemPrompt(card: KuhnCard, style: KuhnPromptStyle = 'rules'): string {
  // Made once per card and wording (the env asks twice per hand).
  const key = STYLES.indexOf(style) * 3 + KUHN_CARDS.indexOf(card);
  const known = STYLES.includes(style) && KUHN_CARDS.includes(card);
  let prompt = known ? systemPrompts[key] : undefined;
  if (prompt === undefined) {
    prompt =
      style !== 'rules'
        ? `Kuhn poker. Your card: ${card}.`
        : `Kuhn poker, ante 1, J < Q < K. Reply with exactly one bracketed action. Your card: ${card}.`;
    if (known) systemPrompts[key] = prompt;
  }
  return prompt;
}

/** System prompts made, by style and card. */
const systemPrompts: (string | undefined)[] = [];

/**
 * The turn message. `rules`: "Betting so far: …. You are Player i. Your legal actions: [a] or [b]."
 * `compact`: "Card K. History: check bet. [fold] or [call]?" — the seat's card again (when given),
 * next to the question: a small policy reads what sits near the question far more easily than a
 * token at the start of the prompt (measured: without it, self-play training stayed blind to the
 * card); the seat follows from the history's length. `pass-bet`: the compact wording with the
 * actions named pass/bet ("Card K. History: pass bet. [pass] or [bet]?").
 */
export function kuhnTurnMessage(
  history: readonly KuhnAction[],
  player: 0 | 1,
  style: KuhnPromptStyle = 'rules',
  card?: KuhnCard,
): string {
  // The env asks at every decision, and there are few messages: each is made once.
  const key = turnMessageKey(history, player, style, card);
  if (key < 0) return turnMessage(history, player, style, card);
  let message = turnMessages[key];
  if (message === undefined) {
    message = turnMessage(history, player, style, card);
    turnMessages[key] = message;
  }
  return message;
}

/** Turn messages made, by {@link turnMessageKey}. */
const turnMessages: (string | undefined)[] = [];
const STYLES: readonly KuhnPromptStyle[] = ['rules', 'compact', 'pass-bet'];

/** A small integer per (decision history, player, style, card), or -1 for anything else (not cached). */
function turnMessageKey(
  history: readonly KuhnAction[],
  player: 0 | 1,
  style: KuhnPromptStyle,
  card: KuhnCard | undefined,
): number {
  const n = history.length;
  const [a, b] = history;
  const h =
    n === 0 ? 0 : n === 1 && a === 'check' ? 1 : n === 1 && a === 'bet' ? 2 : n === 2 && a === 'check' && b === 'bet' ? 3 : -1;
  const s = STYLES.indexOf(style);
  const c = card === undefined ? 0 : KUHN_CARDS.indexOf(card) >= 0 ? KUHN_CARDS.indexOf(card) + 1 : -1;
  if (h < 0 || s < 0 || c < 0 || (player !== 0 && player !== 1)) return -1;
  return ((h * 3 + s) * 4 + c) * 2 + player;
}

function turnMessage(history: readonly KuhnAction[], player: 0 | 1, style: KuhnPromptStyle, card: KuhnCard | undefined): string {
  const [a, b] = offered(history, style);
  if (style !== 'rules') {
    const so = history.length ? history.map((x) => kuhnActionWord(x, style)).join(' ') : 'none';
    return `${card ? `Card ${card}. ` : ''}History: ${so}. [${a}] or [${b}]?`;
  }
  const so = history.length ? history.join(', ') : 'none';
  return `Betting so far: ${so}. You are Player ${player}. Your legal actions: [${a}] or [${b}].`;
}

/** The re-ask sent once after an illegal or ambiguous reply. */
export function kuhnReaskMessage(history: readonly KuhnAction[], style: KuhnPromptStyle = 'rules'): string {
  const [a, b] = offered(history, style);
  if (style !== 'rules') return `Illegal. [${a}] or [${b}]?`;
  return `That is not a legal move. Reply with exactly one of [${a}] or [${b}].`;
}

/**
 * Reads the acting seat, its card and the betting history back from the messages a seat was
 * shown (either style; the last turn message counts). Null when they are not Kuhn messages.
 */
export function kuhnReadSeat(
  messages: readonly { role: string; content?: unknown }[],
): { seat: 0 | 1; card: KuhnCard; history: KuhnAction[] } | null {
  const text = (m: { content?: unknown }) => (typeof m.content === 'string' ? m.content : '');
  const system = messages.find((m) => m.role === 'system');
  const card = system && /Your card: ([JQK])\./.exec(text(system))?.[1];
  let history: KuhnAction[] | null = null;
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const rules = /^Betting so far: (.*?)\. You are Player [01]\./.exec(text(m));
    const compact = rules ? null : /^(?:Card [JQK]\. )?History: (.*?)\. \[/.exec(text(m));
    const so = rules?.[1] ?? compact?.[1];
    if (so === undefined) continue;
    history = readHistory(so === 'none' ? [] : so.split(rules ? ', ' : ' '));
  }
  if (!card || !history) return null;
  return { seat: (history.length % 2) as 0 | 1, card: card as KuhnCard, history };
}

/** A history from its words (either naming); pass/bet name the legal action by position. Null when impossible. */
function readHistory(words: readonly string[]): KuhnAction[] | null {
  const history: KuhnAction[] = [];
  for (const word of words) {
    if (kuhnIsTerminal(history)) return null;
    const legal = kuhnLegalActions(history) as [KuhnAction, KuhnAction];
    const action = actionOfWord(word, legal);
    if (!legal.includes(action as KuhnAction)) return null;
    history.push(action as KuhnAction);
  }
  return history;
}

/**
 * The messages a seat has seen when it reaches an information set, assuming its own earlier
 * replies were the bare bracketed action (how the trainer queries the policy table).
 */
export function kuhnInfoSetMessages(card: KuhnCard, history: readonly KuhnAction[], style: KuhnPromptStyle = 'rules'): Message[] {
  const player = (history.length % 2) as 0 | 1;
  const messages: Message[] = [{ role: 'system', content: kuhnSystemPrompt(card, style) }];
  if (player === 0 && history.length === 2) {
    messages.push({ role: 'user', content: kuhnTurnMessage([], 0, style, card) });
    messages.push({ role: 'assistant', content: `[${kuhnActionWord(history[0] as KuhnAction, style)}]` });
  }
  messages.push({ role: 'user', content: kuhnTurnMessage(history, player, style, card) });
  return messages;
}

/** Every text the env can show a seat (in one style), plus the bracketed actions: the corpus a tokenizer is built from. */
export function kuhnPromptCorpus(style: KuhnPromptStyle = 'rules'): string[] {
  const histories: KuhnAction[][] = [[], ['check'], ['bet'], ['check', 'bet']];
  const out: string[] = [];
  for (const card of KUHN_CARDS) out.push(kuhnSystemPrompt(card, style));
  for (const h of histories) {
    for (const card of KUHN_CARDS) out.push(kuhnTurnMessage(h, (h.length % 2) as 0 | 1, style, card));
    out.push(kuhnReaskMessage(h, style));
  }
  out.push(...kuhnReplyWords(style).map((a) => `[${a}]`));
  return out;
}

/**
 * Parses a reply: the bracketed words (`\[(\w+)\]`, lowercased) that are legal here. Exactly one
 * distinct legal action is a move; none or both is illegal / ambiguous (null). In the `pass-bet`
 * style `[pass]` and `[bet]` name the first and second legal action (check/fold, bet/call).
 */
export function kuhnParseAction(
  reply: string,
  history: readonly KuhnAction[],
  style: KuhnPromptStyle = 'rules',
): KuhnAction | null {
  const legal = legalActionsOf(history) as readonly [KuhnAction, KuhnAction];
  const text = reply.toLowerCase();
  // The distinct legal actions named, without sets: a second distinct one makes the reply ambiguous.
  let named: KuhnAction | null = null;
  BRACKETED.lastIndex = 0;
  for (let match = BRACKETED.exec(text); match !== null; match = BRACKETED.exec(text)) {
    const word = style === 'pass-bet' ? actionOfWord(match[1] as string, legal) : (match[1] as string);
    if (word !== legal[0] && word !== legal[1]) continue;
    if (named === null) named = word as KuhnAction;
    else if (named !== word) return null;
  }
  return named;
}

/** A bracketed word of a reply (`kuhnParseAction`; global, so `lastIndex` is reset before each scan). */
const BRACKETED = /\[(\w+)\]/g;
