import { z } from 'zod';
import type { Interaction } from '../../agent/agent.ts';
import { defineEnv, type EpisodeAgent } from '../../env/env.ts';
import { Task } from '../../task/task.ts';
import { Taskset } from '../../task/taskset.ts';
import type { Trace } from '../../trace/trace.ts';
import { type KuhnAction, type KuhnCard, kuhnActingPlayer, kuhnDeal, kuhnIsTerminal, kuhnPayoff } from './game.ts';
import { kuhnParseAction, kuhnReaskMessage, kuhnSystemPrompt, kuhnTurnMessage } from './prompts.ts';

export const KuhnPokerOptionsSchema = z
  .object({
    /** Re-asks after an illegal or ambiguous reply before the seat forfeits. */
    invalidRetries: z.number().int().min(0).default(1),
    /** Wording of the messages: `rules` (sentences, for LLM seats) or `compact` (≈10 tokens each, for trained policies). */
    prompts: z.enum(['rules', 'compact']).default('rules'),
  })
  .strict();
export type KuhnPokerOptions = z.infer<typeof KuhnPokerOptionsSchema>;

/** What `info.kuhn` holds on each seat's trace. */
export interface KuhnTraceInfo {
  seat: 0 | 1;
  card: KuhnCard;
  history: KuhnAction[];
  seed: number;
  /** True when THIS seat forfeited the hand. */
  forfeited: boolean;
}

/** The infinite Kuhn poker taskset: task i deals from seed i (`info.seed = i`), no prompt. */
export function kuhnTaskset(): Taskset {
  return Taskset.generate(
    'kuhn-poker',
    (i) => new Task({ idx: i, prompt: null, info: { seed: i } }, { key: `kuhn-${i}`, type: 'kuhn-poker' }),
  );
}

/**
 * Kuhn poker between seats `player0` and `player1` (the same model by default: self-play).
 * The host deals from the task's seed and referees: each seat's system prompt has the rules and
 * its card; each turn tells the betting so far and the legal actions; a reply must name exactly
 * one legal bracketed action. An illegal or ambiguous reply is re-asked `invalidRetries` times,
 * then the seat forfeits (−1 to it, +1 to the other). A terminated segment (an error, a limit)
 * also forfeits. Rewards `payoff` are zero-sum; metric `forfeit` is 1 on the seat that forfeited.
 */
export const kuhnPokerEnv = defineEnv({
  id: 'kuhn-poker',
  description: 'Two-seat Kuhn poker, refereed by the host; self-play by default.',
  roles: {
    player0: { harness: 'null', trainable: true },
    player1: { harness: 'null', trainable: true },
  },
  options: KuhnPokerOptionsSchema as z.ZodType<KuhnPokerOptions>,
  maxConcurrentAgents: null,
  taskset: () => kuhnTaskset(),
  run: async ({ task, agents, options }) => {
    const seed = Number((task.data.info as { seed?: unknown } | undefined)?.seed ?? task.data.idx ?? 0);
    const deal = kuhnDeal(seed);
    const seatAgents: [EpisodeAgent, EpisodeAgent] = [agents.player0, agents.player1];
    const seats: Interaction[] = [];
    const history: KuhnAction[] = [];
    let forfeited: 0 | 1 | null = null;
    try {
      for (const seat of [0, 1] as const) {
        const seatTask = task.with({ prompt: null, systemPrompt: kuhnSystemPrompt(deal[seat], options.prompts) });
        seats.push(await (seatAgents[seat] as EpisodeAgent).interaction(seatTask));
      }
      while (!kuhnIsTerminal(history)) {
        const player = kuhnActingPlayer(history);
        const seat = seats[player] as Interaction;
        let message = kuhnTurnMessage(history, player, options.prompts, deal[player]);
        let action: KuhnAction | null = null;
        for (let attempt = 0; attempt <= options.invalidRetries; attempt++) {
          const segment = await seat.turn(message);
          if (segment.terminated) break;
          action = kuhnParseAction(segment.lastReply, history);
          if (action) break;
          message = kuhnReaskMessage(history, options.prompts);
        }
        if (!action) {
          forfeited = player;
          break;
        }
        history.push(action);
      }
    } finally {
      const traces: Trace[] = [];
      for (const seat of seats) traces.push(await seat.close());
      if (traces.length === 2) {
        const net = forfeited !== null ? (forfeited === 0 ? -1 : 1) : kuhnPayoff(deal, history);
        traces.forEach((trace, i) => {
          const seat = i as 0 | 1;
          trace.recordReward('payoff', seat === 0 ? net : -net);
          trace.recordMetric('forfeit', forfeited === seat ? 1 : 0);
          const info: KuhnTraceInfo = { seat, card: deal[seat], history: [...history], seed, forfeited: forfeited === seat };
          trace.info.kuhn = info;
        });
      }
    }
  },
});
