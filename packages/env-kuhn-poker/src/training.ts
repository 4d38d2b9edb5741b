import { ConfigError, type Message } from '@troupe/verifiers';
import {
  KUHN_INFO_SETS,
  type KuhnAction,
  type KuhnCard,
  type KuhnInfoSet,
  type KuhnPolicyTable,
  kuhnAveragePolicy,
  kuhnExpectedPayoff,
  kuhnNashConv,
} from './game.ts';
import {
  type KuhnPromptStyle,
  kuhnActionWord,
  kuhnInfoSetMessages,
  kuhnPromptCorpus,
  kuhnReaskMessage,
  kuhnReplyWords,
  kuhnSystemPrompt,
  kuhnTurnMessage,
} from './prompts.ts';

/** The Kuhn options the training hooks read. */
export interface KuhnTrainingOptions {
  prompts?: KuhnPromptStyle;
}

/** A policy the Kuhn evaluator can read: first-reply-token probabilities over candidate replies. */
export interface KuhnReadablePolicy {
  replyProbabilities?(options: { messages: readonly Message[]; replies: readonly string[] }): Promise<number[]>;
}

/** The seat acting at information set `key`: player 0 with no history or after `pb`, player 1 after one action. */
function seatOf(key: KuhnInfoSet): 0 | 1 {
  return key.length === 2 ? 1 : 0;
}

/**
 * The policy at the 12 information sets: the first reply token's distribution (temperature 1)
 * restricted to the two legal actions and renormalised, `[P(pass), P(bet)]`. With `seats`, each
 * seat's information sets are read from its own policy (the joint strategy of two policies).
 */
export async function kuhnPolicyTable(options: {
  policy: KuhnReadablePolicy;
  prompts?: KuhnPromptStyle;
  seats?: readonly [KuhnReadablePolicy | undefined, KuhnReadablePolicy | undefined];
}): Promise<KuhnPolicyTable> {
  const readers = ([0, 1] as const).map((seat) => {
    const policy = options.seats?.[seat] ?? options.policy;
    const read = policy.replyProbabilities?.bind(policy);
    if (!read)
      throw new ConfigError(`kuhn-poker evaluator: the policy of player${seat} cannot report reply probabilities`, {
        path: 'policy',
      });
    return read;
  });
  const style = options.prompts ?? 'compact';
  const entries = await Promise.all(
    KUHN_INFO_SETS.map(async (key) => {
      const read = readers[seatOf(key)] as NonNullable<KuhnReadablePolicy['replyProbabilities']>;
      const card = key[0] as KuhnCard;
      const history: KuhnAction[] = [...key.slice(1)].map((c) => (c === 'p' ? 'check' : 'bet'));
      const facingBet = key.endsWith('b');
      const replies = [
        `[${kuhnActionWord(facingBet ? 'fold' : 'check', style)}]`,
        `[${kuhnActionWord(facingBet ? 'call' : 'bet', style)}]`,
      ];
      const [pass, bet] = await read({ messages: kuhnInfoSetMessages(card, history, style), replies });
      return [key, [pass as number, bet as number] as const] as [KuhnInfoSet, readonly [number, number]];
    }),
  );
  return Object.fromEntries(entries) as KuhnPolicyTable;
}

function tableJson(table: KuhnPolicyTable): string {
  return `{\n${KUHN_INFO_SETS.map((k) => `  "${k}": [${table[k][0].toFixed(6)}, ${table[k][1].toFixed(6)}]`).join(',\n')}\n}\n`;
}

/**
 * The Kuhn source's evaluator: the policy table at the 12 information sets (each seat's from the
 * policy its role plays, when the run gives one per role), its exact NashConv
 * (0 = Nash, uniform = 11/12) and game value, and the linearly averaged policy (iterate t
 * weighs t, as in CFR+) with its NashConv. Writes `policy-table.json` and
 * `policy-table-average.json`. Its state (the average) is saved with checkpoints.
 */
export function kuhnEvaluator(options: KuhnTrainingOptions = {}) {
  let average: KuhnPolicyTable | null = null;
  let averageWeight = 0;
  return {
    async evaluate({
      policy,
      step,
      roles,
    }: {
      policy: KuhnReadablePolicy;
      step: number;
      roles?: Readonly<Record<string, KuhnReadablePolicy>>;
    }) {
      // Each seat from the policy bound to it (the joint strategy), else both from `policy`.
      const seats = [roles?.player0, roles?.player1] as const;
      const table = await kuhnPolicyTable({ policy, prompts: options.prompts ?? 'rules', seats });
      average = average ? kuhnAveragePolicy([average, table], [averageWeight, step]) : table;
      averageWeight += step;
      return {
        metrics: {
          nash_conv: kuhnNashConv(table),
          nash_conv_average: kuhnNashConv(average),
          game_value: kuhnExpectedPayoff(table),
        },
        artifacts: { 'policy-table.json': tableJson(table), 'policy-table-average.json': tableJson(average) },
      };
    },
    state() {
      return { average: average as unknown as Record<string, number[]> | null, averageWeight };
    },
    loadState(state: unknown) {
      const s = state as { average: KuhnPolicyTable | null; averageWeight: number };
      average = s.average;
      averageWeight = s.averageWeight;
    },
  };
}

/**
 * Kuhn poker's training hooks (an env module's `training`): the tokenizer learns every message
 * the env can write, the reply head is the style's bracketed words, the longest conversation is
 * player 0 re-asked at both decisions, and the evaluator is the exact NashConv.
 */
export const kuhnTraining = {
  vocabulary: (options: KuhnTrainingOptions) => kuhnPromptCorpus(options.prompts ?? 'rules'),
  replyVocabulary: (options: KuhnTrainingOptions) => kuhnReplyWords(options.prompts ?? 'rules').map((w) => `[${w}]`),
  maxSequence({
    options,
    renderLength,
    maxTokens,
  }: {
    options: KuhnTrainingOptions;
    renderLength: (messages: readonly Message[]) => number;
    maxTokens: number;
  }): number {
    const style = options.prompts ?? 'rules';
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
    return renderLength(messages) + maxTokens + 4 * (maxTokens - 1);
  },
  evaluator: (options: KuhnTrainingOptions) => kuhnEvaluator(options),
};
