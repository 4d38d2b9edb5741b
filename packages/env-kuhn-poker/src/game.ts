import { ConfigError } from '@troupe/verifiers';
import { Rng } from '@troupe/verifiers/random';

/** The three cards, weakest first. */
export const KUHN_CARDS = ['J', 'Q', 'K'] as const;
/** A card of Kuhn poker: `J`, `Q` or `K` (weakest first). */
export type KuhnCard = (typeof KUHN_CARDS)[number];

/** Every action a player can name. `check`/`fold` are the passive moves, `bet`/`call` the aggressive ones. */
export const KUHN_ACTIONS = ['check', 'bet', 'call', 'fold'] as const;
/** An action a player names: `check`, `bet`, `call` or `fold`. */
export type KuhnAction = (typeof KUHN_ACTIONS)[number];

/** A deal: `cards[0]` is player 0's card, `cards[1]` player 1's. */
export type KuhnDeal = readonly [KuhnCard, KuhnCard];

/** The 12 information sets: card, then the history with p = check/fold and b = bet/call. */
export const KUHN_INFO_SETS = ['J', 'Q', 'K', 'Jp', 'Qp', 'Kp', 'Jb', 'Qb', 'Kb', 'Jpb', 'Qpb', 'Kpb'] as const;
/**
 * One of the 12 information sets of {@link KUHN_INFO_SETS}: the player's card, then the history (`p`
 * pass, `b` bet).
 */
export type KuhnInfoSet = (typeof KUHN_INFO_SETS)[number];

/** A behaviour policy: for each information set, `[P(pass), P(bet)]` (pass = check or fold, bet = bet or call). */
export type KuhnPolicyTable = Record<KuhnInfoSet, readonly [number, number]>;

const RANK: Record<KuhnCard, number> = { J: 0, Q: 1, K: 2 };

/**
 * Deals two distinct cards from a seed, like Python's `Random(seed).sample([J, Q, K], 2)`:
 * the first card uniformly from three, the second uniformly from the remaining two, drawn with
 * the project's seeded PRNG (`seededRandom`).
 */
export function kuhnDeal(seed: number): KuhnDeal {
  // The same two draws as `seededRandom(seed)`, without a pool to splice (the env deals every hand).
  const rng = new Rng(seed);
  const first = Math.floor(rng.next() * 3);
  // The second card among the two left, in order: the cards below `first`, then those above it.
  const rest = Math.floor(rng.next() * 2);
  return [KUHN_CARDS[first] as KuhnCard, KUHN_CARDS[rest < first ? rest : rest + 1] as KuhnCard];
}

/** True when the betting is over. */
export function kuhnIsTerminal(history: readonly KuhnAction[]): boolean {
  // Compared action by action (no joined string per call: the env asks at every decision).
  const [a, b, c] = history;
  if (history.length === 2) return (a === 'check' && b === 'check') || (a === 'bet' && (b === 'fold' || b === 'call'));
  return history.length === 3 && a === 'check' && b === 'bet' && (c === 'fold' || c === 'call');
}

/** The legal actions after `history` (empty when terminal); errors on a history that cannot happen. */
export function kuhnLegalActions(history: readonly KuhnAction[]): KuhnAction[] {
  return [...legalActionsOf(history)];
}

const OPENING: readonly KuhnAction[] = Object.freeze(['check', 'bet'] as const);
const FACING_BET: readonly KuhnAction[] = Object.freeze(['fold', 'call'] as const);
const NONE: readonly KuhnAction[] = Object.freeze([]);

/**
 * `kuhnLegalActions` as one of three shared frozen lists (the env asks at every decision, and
 * only reads them).
 * @internal
 */
export function legalActionsOf(history: readonly KuhnAction[]): readonly KuhnAction[] {
  const n = history.length;
  const [a, b] = history;
  if (n === 0 || (n === 1 && a === 'check')) return OPENING;
  if ((n === 1 && a === 'bet') || (n === 2 && a === 'check' && b === 'bet')) return FACING_BET;
  if (kuhnIsTerminal(history)) return NONE;
  throw new ConfigError(`not a Kuhn poker history: ${JSON.stringify(history.join('-'))}`);
}

/** The player to act: `''` → 0, `check` → 1, `bet` → 1, `check-bet` → 0. */
export function kuhnActingPlayer(history: readonly KuhnAction[]): 0 | 1 {
  if (kuhnIsTerminal(history)) throw new ConfigError(`history ${history.join('-')} is terminal`, { path: 'history' });
  legalActionsOf(history);
  return (history.length % 2) as 0 | 1;
}

/**
 * Player 0's net payoff at a terminal history (player 1 gets the negative): check-check ±1 at
 * showdown, bet-fold +1, check-bet-fold −1, bet-call and check-bet-call ±2 at showdown.
 */
export function kuhnPayoff(deal: KuhnDeal, history: readonly KuhnAction[]): number {
  if (!kuhnIsTerminal(history))
    throw new ConfigError(`history ${JSON.stringify(history.join('-'))} is not terminal`, { path: 'history' });
  // Read action by action (no joined string per hand): a terminal history ends in check, fold or call.
  const showdown = RANK[deal[0]] > RANK[deal[1]] ? 1 : -1;
  const last = history[history.length - 1];
  if (last === 'check') return showdown;
  if (last === 'fold') return history.length === 2 ? 1 : -1;
  return 2 * showdown;
}

/** The information-set key of the acting player: card, then `p` for check/fold and `b` for bet/call. */
export function kuhnInfoSetKey(card: KuhnCard, history: readonly KuhnAction[]): KuhnInfoSet {
  const letters = history.map((a) => (a === 'check' || a === 'fold' ? 'p' : 'b')).join('');
  const key = `${card}${letters}`;
  if (!(KUHN_INFO_SETS as readonly string[]).includes(key)) throw new ConfigError(`no information set ${key}`);
  return key as KuhnInfoSet;
}

/** The uniform random policy (NashConv 11/12). */
export function uniformKuhnPolicy(): KuhnPolicyTable {
  return Object.fromEntries(KUHN_INFO_SETS.map((k) => [k, [0.5, 0.5] as const])) as KuhnPolicyTable;
}

/**
 * A Nash equilibrium of the known one-parameter family (α ∈ [0, 1/3]): player 0 bets J with α,
 * never bets Q, bets K with 3α, calls with Q at α + 1/3 and always with K; player 1 calls a bet
 * with Q at 1/3 and K always, and after a check bets J at 1/3 and K always.
 */
export function kuhnEquilibrium(alpha = 1 / 6): KuhnPolicyTable {
  if (!(alpha >= 0 && alpha <= 1 / 3)) throw new ConfigError(`alpha must be in [0, 1/3], got ${alpha}`, { path: 'alpha' });
  const bet = (p: number) => [1 - p, p] as const;
  return {
    J: bet(alpha),
    Q: bet(0),
    K: bet(3 * alpha),
    Jp: bet(1 / 3),
    Qp: bet(0),
    Kp: bet(1),
    Jb: bet(0),
    Qb: bet(1 / 3),
    Kb: bet(1),
    Jpb: bet(0),
    Qpb: bet(alpha + 1 / 3),
    Kpb: bet(1),
  };
}

function actionProbability(policy: KuhnPolicyTable, card: KuhnCard, history: readonly KuhnAction[], action: KuhnAction): number {
  const [pass, bet] = policy[kuhnInfoSetKey(card, history)];
  const total = pass + bet;
  if (!(total > 0)) throw new ConfigError(`policy at ${kuhnInfoSetKey(card, history)} has no mass`, { path: 'policy' });
  return (action === 'check' || action === 'fold' ? pass : bet) / total;
}

/** Expected payoff of player 0 when both seats play `policy`, by exact enumeration of the 6 deals. */
export function kuhnExpectedPayoff(policy: KuhnPolicyTable): number {
  const walk = (deal: KuhnDeal, history: KuhnAction[]): number => {
    if (kuhnIsTerminal(history)) return kuhnPayoff(deal, history);
    const player = kuhnActingPlayer(history);
    let value = 0;
    for (const action of kuhnLegalActions(history)) {
      const p = actionProbability(policy, deal[player], history, action);
      if (p > 0) value += p * walk(deal, [...history, action]);
    }
    return value;
  };
  let total = 0;
  for (const deal of allDeals()) total += walk(deal, []) / 6;
  return total;
}

/**
 * The value player `player` gets by best-responding to `policy` (which the other seat plays),
 * exactly: for each own card, a recursion over histories that carries the opponent's reach
 * weights per opponent card, maximising at each own information set.
 */
export function kuhnBestResponseValue(policy: KuhnPolicyTable, player: 0 | 1): number {
  const sign = player === 0 ? 1 : -1;
  const walk = (card: KuhnCard, history: KuhnAction[], weights: Map<KuhnCard, number>): number => {
    if (kuhnIsTerminal(history)) {
      let v = 0;
      for (const [other, w] of weights) {
        const deal: KuhnDeal = player === 0 ? [card, other] : [other, card];
        v += w * sign * kuhnPayoff(deal, history);
      }
      return v;
    }
    const actor = kuhnActingPlayer(history);
    const actions = kuhnLegalActions(history);
    if (actor === player) return Math.max(...actions.map((a) => walk(card, [...history, a], weights)));
    let v = 0;
    for (const a of actions) {
      const next = new Map<KuhnCard, number>();
      for (const [other, w] of weights) next.set(other, w * actionProbability(policy, other, history, a));
      v += walk(card, [...history, a], next);
    }
    return v;
  };
  let total = 0;
  for (const card of KUHN_CARDS) {
    const weights = new Map<KuhnCard, number>(KUHN_CARDS.filter((c) => c !== card).map((c) => [c, 1 / 2]));
    total += walk(card, [], weights) / 3;
  }
  return total;
}

/**
 * Exact NashConv of a policy played by both seats: the sum of both players' best-response
 * gains, `BR0 + BR1` (the game is zero-sum, so the policy's own values cancel). 0 exactly at a
 * Nash equilibrium; 11/12 for uniform random.
 */
export function kuhnNashConv(policy: KuhnPolicyTable): number {
  return kuhnBestResponseValue(policy, 0) + kuhnBestResponseValue(policy, 1);
}

/** The 6 possible deals. */
export function allDeals(): KuhnDeal[] {
  const out: KuhnDeal[] = [];
  for (const a of KUHN_CARDS) for (const b of KUHN_CARDS) if (a !== b) out.push([a, b]);
  return out;
}

/**
 * The probability that `player` plays the actions leading to information set `key` (its own
 * reach; used to average behaviour policies over time in sequence form).
 */
export function kuhnOwnReach(policy: KuhnPolicyTable, key: KuhnInfoSet): number {
  if (key.length !== 3) return 1;
  const [pass, bet] = policy[key.slice(0, 1) as KuhnInfoSet];
  return pass / (pass + bet);
}

/**
 * Averages behaviour policies in sequence form: each information set's action probabilities
 * are weighted by the player's own reach probability under each policy (the correct average
 * strategy for a perfect-recall game). `weights` default to 1 each.
 */
export function kuhnAveragePolicy(policies: readonly KuhnPolicyTable[], weights?: readonly number[]): KuhnPolicyTable {
  if (policies.length === 0) throw new ConfigError('kuhnAveragePolicy: no policies', { path: 'policies' });
  const out = {} as Record<KuhnInfoSet, readonly [number, number]>;
  for (const key of KUHN_INFO_SETS) {
    let pass = 0;
    let bet = 0;
    let mass = 0;
    policies.forEach((policy, i) => {
      const w = (weights?.[i] ?? 1) * kuhnOwnReach(policy, key);
      const [p, b] = policy[key];
      pass += (w * p) / (p + b);
      bet += (w * b) / (p + b);
      mass += w;
    });
    out[key] = mass > 0 ? [pass / mass, bet / mass] : [0.5, 0.5];
  }
  return out;
}
