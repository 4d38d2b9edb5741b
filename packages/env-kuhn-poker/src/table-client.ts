import {
  contentText,
  type Message,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  ParseError,
} from '@troupe/verifiers';
import { seededRandom } from '@troupe/verifiers/random';
import {
  type KuhnAction,
  type KuhnCard,
  type KuhnPolicyTable,
  kuhnEquilibrium,
  kuhnInfoSetKey,
  kuhnLegalActions,
  uniformKuhnPolicy,
} from './game.ts';
import { kuhnReadSeat } from './prompts.ts';

/** Reads the seat, card and betting history from the Kuhn env's messages (either prompt style). */
export function readKuhnSeat(messages: ModelRequest['messages']): { seat: 0 | 1; card: KuhnCard; history: KuhnAction[] } | null {
  return kuhnReadSeat(
    messages.map((m) => ({ role: m.role, content: m.role === 'assistant' ? (m.content ?? '') : contentText(m.content) })),
  );
}

/** A fixed opponent: answers each turn with a bracketed action sampled from a policy table. */
export class TablePolicyClient implements ModelClient {
  readonly model: string;
  private readonly random: () => number;

  constructor(private readonly options: { name: string; table: KuhnPolicyTable; seed: number }) {
    this.model = options.name;
    this.random = seededRandom(options.seed);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const seat = readKuhnSeat(request.messages);
    let content = '';
    if (seat) {
      const [pass, bet] = this.options.table[kuhnInfoSetKey(seat.card, seat.history)];
      const [a, b] = kuhnLegalActions(seat.history) as [KuhnAction, KuhnAction];
      content = `[${this.random() * (pass + bet) < pass ? a : b}]`;
    }
    return {
      id: 'table',
      model: this.model,
      message: { role: 'assistant', content },
      finishReason: 'stop',
      usage: { promptTokens: 0, completionTokens: 1 },
    };
  }
}

/**
 * A policy table as a fixed player: a client that samples from it, and the probabilities the
 * exact evaluator reads at each information set (`[P(pass), P(bet)]`).
 */
export interface KuhnTablePlayer {
  client: ModelClient;
  replyProbabilities(options: { messages: readonly Message[]; replies: readonly string[] }): Promise<number[]>;
}

/** A policy table as a {@link KuhnTablePlayer}; `seed` fixes the client's sampling. */
export function kuhnTablePlayer(table: KuhnPolicyTable, options: { name: string; seed: number }): KuhnTablePlayer {
  return {
    client: new TablePolicyClient({ name: options.name, table, seed: options.seed }),
    async replyProbabilities({ messages }) {
      const seat = readKuhnSeat([...messages] as ModelRequest['messages']);
      if (!seat) throw new ParseError(`${options.name}: the messages are not a Kuhn poker information set`);
      return [...table[kuhnInfoSetKey(seat.card, seat.history)]];
    },
  };
}

/**
 * Kuhn poker's fixed opponents (an env module's `opponents`, which `troupe crossplay --opponent`
 * names): `uniform` (each legal action with probability 1/2) and `equilibrium` (a Nash
 * equilibrium, α = 1/6: player 0 expects −1/18 against it).
 */
export const kuhnOpponents = {
  uniform: {
    description: 'each legal action with probability 1/2',
    create: ({ seed }: { seed: number }) => kuhnTablePlayer(uniformKuhnPolicy(), { name: 'uniform', seed }),
  },
  equilibrium: {
    description: 'a Nash equilibrium (α = 1/6)',
    create: ({ seed }: { seed: number }) => kuhnTablePlayer(kuhnEquilibrium(1 / 6), { name: 'equilibrium', seed }),
  },
};
