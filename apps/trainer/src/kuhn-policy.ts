import { type PolicyConfig, PolicyConfigSchema, WordTokenizer } from '@troupe/prime-rl';
import {
  KUHN_INFO_SETS,
  type KuhnAction,
  type KuhnCard,
  type KuhnInfoSet,
  type KuhnPolicyTable,
  type KuhnPromptStyle,
  kuhnActionWord,
  kuhnInfoSetMessages,
  kuhnPromptCorpus,
  kuhnReaskMessage,
  kuhnReplyWords,
  kuhnSystemPrompt,
  kuhnTurnMessage,
  type Message,
} from '@troupe/verifiers';

/** The tokenizer of the Kuhn env: its prompts (in one style) plus the bracketed actions. */
export function kuhnTokenizer(style: KuhnPromptStyle = 'compact'): WordTokenizer {
  return WordTokenizer.fromCorpus({ corpus: kuhnPromptCorpus(style) });
}

/**
 * Tokens of the longest conversation a seat can see: player 0 re-asked at both of its
 * decisions (4 prompts and 4 replies), with replies of `maxTokens` tokens.
 */
export function kuhnMaxSequence(tokenizer: WordTokenizer, maxTokens: number, style: KuhnPromptStyle = 'compact'): number {
  const reply = (a: KuhnAction): Message => ({ role: 'assistant', content: `[${a}]` });
  const messages: Message[] = [
    { role: 'system', content: kuhnSystemPrompt('K', style) },
    { role: 'user', content: kuhnTurnMessage([], 0, style, 'K') },
    reply('call'),
    { role: 'user', content: kuhnReaskMessage([], style) },
    reply('check'),
    { role: 'user', content: kuhnTurnMessage(['check', 'bet'], 0, style, 'K') },
    reply('check'),
    { role: 'user', content: kuhnReaskMessage(['check', 'bet'], style) },
  ];
  return tokenizer.renderChat({ messages }).length + maxTokens + 4 * (maxTokens - 1);
}

/**
 * The policy shape for Kuhn poker. Output vocabulary: the style's bracketed reply words — `[pass]`
 * `[bet]` (`pass-bet`: both legal everywhere), or the four actions (two of them illegal at any
 * information set, re-asked then forfeited) — plus `<eos>` when replies may be longer than one
 * token (an empty or unfinished reply is then possible, so the forfeit path stays real).
 */
export function kuhnPolicyConfig(options: {
  tokenizer: WordTokenizer;
  maxTokens: number;
  dModel: number;
  layers: number;
  heads: number;
  ffnMult: number;
  seed: number;
  /** Initial weight std (default 0.02). */
  initStd?: number;
  prompts?: KuhnPromptStyle;
}): PolicyConfig {
  const { tokenizer } = options;
  const context = Math.ceil(kuhnMaxSequence(tokenizer, options.maxTokens, options.prompts ?? 'compact') / 8) * 8;
  return PolicyConfigSchema.parse({
    vocabSize: tokenizer.size,
    contextLength: context,
    dModel: options.dModel,
    layers: options.layers,
    heads: options.heads,
    ffnMult: options.ffnMult,
    ...(options.initStd !== undefined ? { initStd: options.initStd } : {}),
    // A one-token reply needs no `<eos>`: the head then names one of the reply words.
    outputTokens: [
      ...kuhnReplyWords(options.prompts).map((a) => tokenizer.id(`[${a}]`)),
      ...(options.maxTokens > 1 ? [tokenizer.eosId] : []),
    ],
    seed: options.seed,
  });
}

/**
 * The policy at the 12 information sets: the first reply token's distribution (temperature 1)
 * restricted to the two legal actions and renormalised, `[P(pass), P(bet)]`.
 */
export async function kuhnPolicyTable(options: {
  tokenizer: WordTokenizer;
  nextLogits: (tokens: readonly number[]) => Promise<Float32Array>;
  prompts?: KuhnPromptStyle;
}): Promise<KuhnPolicyTable> {
  const { tokenizer } = options;
  const entries = await Promise.all(
    KUHN_INFO_SETS.map(async (key) => {
      const card = key[0] as KuhnCard;
      const history: KuhnAction[] = [...key.slice(1)].map((c, i) => (c === 'p' ? 'check' : i === 0 ? 'bet' : 'bet'));
      // 'b' after 'p' is a bet; the acting seat answers a bet with fold/call.
      const facingBet = key.endsWith('b');
      const pass = tokenizer.id(`[${kuhnActionWord(facingBet ? 'fold' : 'check', options.prompts)}]`);
      const bet = tokenizer.id(`[${kuhnActionWord(facingBet ? 'call' : 'bet', options.prompts)}]`);
      const tokens = tokenizer.renderChat({ messages: kuhnInfoSetMessages(card, history, options.prompts ?? 'compact') });
      const logits = await options.nextLogits(tokens);
      const a = logits[pass] as number;
      const b = logits[bet] as number;
      const m = Math.max(a, b);
      const ea = Math.exp(a - m);
      const eb = Math.exp(b - m);
      return [key, [ea / (ea + eb), eb / (ea + eb)] as const] as [KuhnInfoSet, readonly [number, number]];
    }),
  );
  return Object.fromEntries(entries) as KuhnPolicyTable;
}
