import { ConfigError, defineEnv, type EpisodeAgent, type Interaction, Task, Taskset, type Trace } from '@troupe/verifiers';
import { z } from 'zod';
import {
  allDeals,
  type KuhnAction,
  type KuhnCard,
  type KuhnDeal,
  kuhnActingPlayer,
  kuhnDeal,
  kuhnIsTerminal,
  kuhnPayoff,
} from './game.ts';
import { kuhnParseAction, kuhnReaskMessage, kuhnSystemPrompt, kuhnTurnMessage } from './prompts.ts';
import { kuhnOpponents } from './table-client.ts';
import { kuhnTraining } from './training.ts';

/**
 * Options of `kuhn-poker` (keys of `[env]`): re-asks before a forfeit, the prompt wording and how the
 * env's taskset deals.
 */
export const KuhnPokerOptionsSchema = z
  .object({
    /** Re-asks after an illegal or ambiguous reply before the seat forfeits. */
    invalidRetries: z.number().int().min(0).default(1),
    /**
     * Wording of the messages: `rules` (sentences, for LLM seats), `compact` (≈10 tokens each, for
     * trained policies) or `pass-bet` (compact, with the actions named [pass] / [bet] everywhere).
     */
    prompts: z.enum(['rules', 'compact', 'pass-bet']).default('rules'),
    /** How the env's own taskset deals: `seeded` (task i from seed i) or `stratified` (the six deals in turn). */
    deals: z.enum(['seeded', 'stratified']).default('seeded'),
  })
  .strict();
/**
 * The options of `kuhn-poker` after parsing (defaults: 1 re-ask, `rules` prompts, `seeded` deals);
 * see {@link KuhnPokerOptionsSchema}.
 */
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

/**
 * The infinite Kuhn poker taskset, no prompt. `seeded` (default): task i deals from seed i
 * (`info.seed = i`). `stratified`: task i deals the (i mod 6)-th of the six deals
 * (`info.deal`, e.g. `"JK"`: player 0 holds J), so any 6 consecutive tasks hold every deal once —
 * stratified sampling of the chance node, which removes deal luck from a training batch's mix.
 */
export function kuhnTaskset(options: { deals?: 'seeded' | 'stratified' } = {}): Taskset {
  const deals = allDeals();
  const stratified = options.deals === 'stratified';
  return Taskset.generate('kuhn-poker', (i) => {
    const info = stratified ? { seed: i, deal: (deals[i % deals.length] as KuhnDeal).join('') } : { seed: i };
    return new Task({ idx: i, prompt: null, info }, { key: `kuhn-${i}`, type: 'kuhn-poker' });
  });
}

/** The deal of a task: `info.deal` ("JK": player 0 holds J) when present, else from `info.seed` (or the index). */
export function kuhnTaskDeal(
  info: { seed?: unknown; deal?: unknown } | undefined,
  idx: number | undefined,
): { deal: KuhnDeal; seed: number } {
  const seed = Number(info?.seed ?? idx ?? 0);
  if (info?.deal === undefined) return { deal: kuhnDeal(seed), seed };
  const d = info.deal;
  if (typeof d !== 'string' || !/^[JQK]{2}$/.test(d) || d[0] === d[1])
    throw new ConfigError(
      `kuhn-poker task info.deal: expected two different cards of J, Q, K such as "JK", got ${JSON.stringify(d)}`,
    );
  return { deal: [d[0] as KuhnCard, d[1] as KuhnCard], seed };
}

/**
 * Kuhn poker between seats `player0` and `player1` (the same model by default: self-play).
 * The host deals from the task's seed and referees: each seat's system prompt has the rules and
 * its card; each turn tells the betting so far and the legal actions; a reply must name exactly
 * one legal bracketed action. An illegal or ambiguous reply is re-asked `invalidRetries` times,
 * then the seat forfeits (−1 to it, +1 to the other). A terminated segment (an error, a limit)
 * also forfeits. Rewards `payoff` are zero-sum; metric `forfeit` is 1 on the seat that forfeited.
 * It carries its training hooks (`training`: the exact NashConv evaluator) and its fixed
 * opponents (`opponents`: `uniform`, `equilibrium`).
 */
export const kuhnPokerEnv = Object.assign(
  defineEnv({
    id: 'kuhn-poker',
    description: 'Two-seat Kuhn poker, refereed by the host; self-play by default.',
    roles: {
      player0: { harness: 'null', trainable: true },
      player1: { harness: 'null', trainable: true },
    },
    options: KuhnPokerOptionsSchema as z.ZodType<KuhnPokerOptions>,
    maxConcurrentAgents: null,
    taskset: (options) => kuhnTaskset({ deals: options.deals }),
    run: async ({ task, agents, options }) => {
      const { deal, seed } = kuhnTaskDeal(task.data.info as { seed?: unknown; deal?: unknown } | undefined, task.data.idx);
      const seatAgents: [EpisodeAgent, EpisodeAgent] = [agents.player0, agents.player1];
      const seats: Interaction[] = [];
      const history: KuhnAction[] = [];
      let forfeited: 0 | 1 | null = null;
      try {
        for (let seat: 0 | 1 = 0; seat < 2; seat = (seat + 1) as 0 | 1) {
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
            action = kuhnParseAction(segment.lastReply, history, options.prompts);
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
          for (let i = 0; i < 2; i++) {
            const seat = i as 0 | 1;
            const trace = traces[i] as Trace;
            trace.recordReward('payoff', seat === 0 ? net : -net);
            trace.recordMetric('forfeit', forfeited === seat ? 1 : 0);
            const info: KuhnTraceInfo = { seat, card: deal[seat], history: [...history], seed, forfeited: forfeited === seat };
            trace.info.kuhn = info;
          }
        }
      }
    },
  }),
  { training: kuhnTraining, opponents: kuhnOpponents },
);
