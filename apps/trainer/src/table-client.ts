import { contentText, type ModelClient, type ModelRequest, type ModelResponse } from '@troupe/verifiers';
import {
  type KuhnAction,
  type KuhnCard,
  type KuhnPolicyTable,
  kuhnInfoSetKey,
  kuhnLegalActions,
  kuhnReadSeat,
} from '@troupe/verifiers/kuhn';
import { seededRandom } from '@troupe/verifiers/random';

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

/** Routes each request to the client of the seat named in the messages ("You are Player i"). */
export class SeatRouterClient implements ModelClient {
  readonly model = 'router';
  constructor(private readonly seats: [ModelClient, ModelClient]) {}

  complete(request: ModelRequest): Promise<ModelResponse> {
    const seat = readKuhnSeat(request.messages)?.seat ?? 0;
    return this.seats[seat].complete(request);
  }
}
