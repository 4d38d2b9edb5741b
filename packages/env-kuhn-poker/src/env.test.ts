import { contentText, Env, type ModelClient, type ModelRequest, type ModelResponse } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { type KuhnTraceInfo, kuhnPokerEnv, kuhnTaskDeal, kuhnTaskset } from './env.ts';
import { allDeals, kuhnDeal, kuhnPayoff } from './game.ts';
import { kuhnInfoSetMessages, kuhnParseAction, kuhnReadSeat } from './prompts.ts';

/** A chat client that answers by the seat named in the last user message. */
function scripted(
  reply: (seat: 0 | 1, lastUser: string, request: ModelRequest) => string,
): ModelClient & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    model: 'scripted',
    requests,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      requests.push(request);
      const users = request.messages.filter((m) => m.role === 'user');
      const allUsers = users.map((m) => contentText(m.content)).join('\n');
      const seat = /You are Player 1/.test(allUsers) ? 1 : 0;
      const content = reply(seat, contentText(users.at(-1)?.content), request);
      return {
        id: 'x',
        model: 'scripted',
        message: { role: 'assistant', content },
        finishReason: 'stop',
        usage: { promptTokens: 1, completionTokens: 1 },
      };
    },
  };
}

async function play(client: ModelClient, seed: number) {
  const env = await Env.create({ definition: kuhnPokerEnv, config: { id: 'kuhn-poker' }, run: { model: 'scripted', client } });
  const task = kuhnTaskset().at(seed);
  return env.runEpisode({ task, group: { id: 'g', index: 0 } });
}

describe('kuhn-poker env', () => {
  it('plays a hand to showdown with zero-sum payoffs, the deal and history in info', async () => {
    const client = scripted((seat) => (seat === 0 ? 'I will [bet]' : '[call]'));
    for (const seed of [0, 1, 2, 3]) {
      const episode = await play(client, seed);
      expect(episode.ok).toBe(true);
      const [p0, p1] = [episode.byAgent.player0?.[0], episode.byAgent.player1?.[0]];
      const deal = kuhnDeal(seed);
      const net = kuhnPayoff(deal, ['bet', 'call']);
      expect(Math.abs(net)).toBe(2);
      expect(p0?.rewards.payoff?.score).toBe(net);
      expect(p1?.rewards.payoff?.score).toBe(-net);
      expect(p0?.metrics.forfeit).toBe(0);
      const info = p1?.info.kuhn as KuhnTraceInfo;
      expect(info).toEqual({ seat: 1, card: deal[1], history: ['bet', 'call'], seed, forfeited: false });
      // The seat saw the rules with its card, then the turn message with its legal actions.
      const messages = p1?.messages ?? [];
      expect(messages[0]?.role).toBe('system');
      expect(contentText(messages[0]?.role === 'system' ? messages[0].content : '')).toContain(`Your card: ${deal[1]}.`);
      expect(contentText((messages[1] as { content: string }).content)).toBe(
        'Betting so far: bet. You are Player 1. Your legal actions: [fold] or [call].',
      );
    }
  });

  it('plays check-bet-fold with player 0 deciding twice in one trace', async () => {
    const client = scripted((seat, last) => (seat === 1 ? '[bet]' : last.includes('[fold]') ? '[fold]' : '[check]'));
    const episode = await play(client, 5);
    const p0 = episode.byAgent.player0?.[0];
    expect((p0?.info.kuhn as KuhnTraceInfo | undefined)?.history).toEqual(['check', 'bet', 'fold']);
    expect(p0?.rewards.payoff?.score).toBe(-1);
    expect(p0?.numTurns).toBe(2);
    expect(episode.byAgent.player1?.[0]?.rewards.payoff?.score).toBe(1);
  });

  it('re-asks once after an illegal or ambiguous reply, then forfeits the seat that never names a legal action', async () => {
    const client = scripted((seat) => (seat === 0 ? '[check] or maybe [bet]' : 'I fold!'));
    const episode = await play(client, 9);
    expect(episode.ok).toBe(true);
    const p0 = episode.byAgent.player0?.[0];
    // Player 0 was ambiguous twice: it forfeits before player 1 ever plays.
    expect(p0?.numTurns).toBe(2);
    expect(contentText((p0?.messages.at(-2) as { content: string } | undefined)?.content)).toMatch(/not a legal move/);
    expect(p0?.rewards.payoff?.score).toBe(-1);
    expect(p0?.metrics.forfeit).toBe(1);
    expect((p0?.info.kuhn as KuhnTraceInfo | undefined)?.forfeited).toBe(true);
    expect(episode.byAgent.player1?.[0]?.rewards.payoff?.score).toBe(1);

    const client2 = scripted((seat) => (seat === 0 ? '[bet]' : 'I fold!'));
    const episode2 = await play(client2, 9);
    const p1 = episode2.byAgent.player1?.[0];
    expect(p1?.numTurns).toBe(2);
    expect(p1?.rewards.payoff?.score).toBe(-1);
    expect(p1?.metrics.forfeit).toBe(1);
    expect(episode2.byAgent.player0?.[0]?.rewards.payoff?.score).toBe(1);
    expect(episode2.byAgent.player0?.[0]?.metrics.forfeit).toBe(0);
  });

  it('words its messages compactly with prompts: compact (card, history, legal actions), and forfeits at once with invalidRetries 0', async () => {
    const client = scripted((_seat, last) => (last.includes('[fold]') ? '[bet]' : '[bet]'));
    const env = await Env.create({
      definition: kuhnPokerEnv,
      config: { id: 'kuhn-poker', prompts: 'compact', invalidRetries: 0 },
      run: { model: 'scripted', client },
    });
    const episode = await env.runEpisode({ task: kuhnTaskset().at(3), group: { id: 'g', index: 0 } });
    const p1 = episode.byAgent.player1?.[0];
    const deal = kuhnDeal(3);
    expect(contentText(((p1?.messages ?? [])[0] as { content: string }).content)).toBe(`Kuhn poker. Your card: ${deal[1]}.`);
    expect(contentText(((p1?.messages ?? [])[1] as { content: string }).content)).toBe(
      `Card ${deal[1]}. History: bet. [fold] or [call]?`,
    );
    // Player 1 named an illegal action once: with no re-ask it forfeits.
    expect(p1?.numTurns).toBe(1);
    expect(p1?.metrics.forfeit).toBe(1);
    expect(episode.byAgent.player0?.[0]?.rewards.payoff?.score).toBe(1);
  });

  it('names the actions [pass] / [bet] at every decision with prompts: pass-bet (check-bet-call through the aliases)', async () => {
    // Player 0 passes then answers the bet with [bet] (= call); player 1 bets after the check.
    const client = scripted((_seat, last) => (last.includes('History: none') ? '[pass]' : '[bet]'));
    const env = await Env.create({
      definition: kuhnPokerEnv,
      config: { id: 'kuhn-poker', prompts: 'pass-bet', invalidRetries: 0 },
      run: { model: 'scripted', client },
    });
    const episode = await env.runEpisode({ task: kuhnTaskset().at(5), group: { id: 'g', index: 0 } });
    const deal = kuhnDeal(5);
    const p0 = episode.byAgent.player0?.[0];
    expect((p0?.info.kuhn as KuhnTraceInfo | undefined)?.history).toEqual(['check', 'bet', 'call']);
    expect(p0?.rewards.payoff?.score).toBe(kuhnPayoff(deal, ['check', 'bet', 'call']));
    expect(p0?.metrics.forfeit).toBe(0);
    const users = (p0?.messages ?? [])
      .filter((m) => m.role === 'user')
      .map((m) => contentText((m as { content: string }).content));
    expect(users).toEqual([
      `Card ${deal[0]}. History: none. [pass] or [bet]?`,
      `Card ${deal[0]}. History: pass bet. [pass] or [bet]?`,
    ]);
  });

  it('stratified tasksets deal every deal once in any 6 consecutive tasks, and a bad info.deal is refused by name', async () => {
    const taskset = kuhnTaskset({ deals: 'stratified' });
    for (const from of [0, 7, 1000]) {
      const deals = Array.from({ length: 6 }, (_, i) => {
        const task = taskset.at(from + i);
        return kuhnTaskDeal(task.data.info as { deal?: unknown }, task.data.idx).deal.join('');
      });
      expect(new Set(deals).size).toBe(6);
    }
    expect(allDeals().map((d) => d.join(''))).toContain(kuhnTaskDeal({ seed: 3 }, 3).deal.join(''));
    expect(kuhnTaskDeal({ seed: 3 }, 3).deal).toEqual(kuhnDeal(3));
    expect(() => kuhnTaskDeal({ deal: 'KK' }, 0)).toThrow(/info\.deal/);
    expect(() => kuhnTaskDeal({ deal: ['J', 'Q'] }, 0)).toThrow(/info\.deal/);
    // The env plays the task's deal: player 0 holds the first card.
    const client = scripted(() => '[check]');
    const env = await Env.create({ definition: kuhnPokerEnv, config: { id: 'kuhn-poker' }, run: { model: 'scripted', client } });
    const episode = await env.runEpisode({ task: taskset.at(4), group: { id: 'g', index: 0 } });
    expect((episode.byAgent.player0?.[0]?.info.kuhn as KuhnTraceInfo | undefined)?.card).toBe(allDeals()[4]?.[0]);
    expect((episode.byAgent.player1?.[0]?.info.kuhn as KuhnTraceInfo | undefined)?.card).toBe(allDeals()[4]?.[1]);
  });

  it('parses pass/bet by position only in the pass-bet style; both named at once is ambiguous', () => {
    expect(kuhnParseAction('[pass]', ['bet'], 'pass-bet')).toBe('fold');
    expect(kuhnParseAction('[bet]', ['bet'], 'pass-bet')).toBe('call');
    expect(kuhnParseAction('[bet]', [], 'pass-bet')).toBe('bet');
    expect(kuhnParseAction('[call]', ['check', 'bet'], 'pass-bet')).toBe('call');
    expect(kuhnParseAction('[pass] [bet]', [], 'pass-bet')).toBeNull();
    expect(kuhnParseAction('[bet]', ['bet'], 'compact')).toBeNull();
    expect(kuhnParseAction('[pass]', [], 'rules')).toBeNull();
  });

  it('reads the seat, card and history back from either prompt style', () => {
    for (const style of ['rules', 'compact', 'pass-bet'] as const) {
      expect(kuhnReadSeat(kuhnInfoSetMessages('Q', ['check', 'bet'], style))).toEqual({
        seat: 0,
        card: 'Q',
        history: ['check', 'bet'],
      });
      expect(kuhnReadSeat(kuhnInfoSetMessages('J', [], style))).toEqual({ seat: 0, card: 'J', history: [] });
      expect(kuhnReadSeat(kuhnInfoSetMessages('K', ['bet'], style))).toEqual({ seat: 1, card: 'K', history: ['bet'] });
    }
    expect(kuhnReadSeat([{ role: 'user', content: 'hello' }])).toBeNull();
    // An impossible history (a bet after a call) is not a seat.
    expect(
      kuhnReadSeat([
        { role: 'system', content: 'Your card: K.' },
        { role: 'user', content: 'History: bet bet bet. [pass] or [bet]?' },
      ]),
    ).toBeNull();
  });
});
