import { frozenCheckpointClient, loadEmbeddedCheckpoint } from '@troupe/prime-rl/orchestrator';
import { ConfigError, Env, type ModelClient } from '@troupe/verifiers';
import { kuhnEquilibrium, kuhnPokerEnv, kuhnTaskset, uniformKuhnPolicy } from '@troupe/verifiers/kuhn';
import { registerGameRuntime } from './game-runtime.ts';
import type { RunConfig } from './run-config.ts';
import { SeatRouterClient, TablePolicyClient } from './table-client.ts';

export interface SeatResult {
  mean: number;
  /** Half-width of the 95% confidence interval (1.96·sd/√n). */
  ci95: number;
}

export interface MatchResult {
  opponent: string;
  hands: number;
  asPlayer0: SeatResult;
  asPlayer1: SeatResult;
  forfeitRate: number;
}

/** Mean and the half-width of its 95% confidence interval (1.96·sd/√n, sample sd). */
export function summarize(values: readonly number[]): SeatResult {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(n - 1, 1);
  return { mean, ci95: (1.96 * Math.sqrt(variance)) / Math.sqrt(n) };
}

/**
 * Plays a checkpoint's policy against fixed opponents — uniform random, an equilibrium policy
 * (α = 1/6), and itself — `hands` hands in each seat, and reports its payoff per seat with 95%
 * confidence intervals. At equilibrium player 0 expects −1/18 ≈ −0.056.
 */
export async function evaluateCheckpoint(options: { checkpoint: string; hands: number; seed: number }): Promise<MatchResult[]> {
  registerGameRuntime();
  const loaded = await loadEmbeddedCheckpoint(options.checkpoint);
  if (!loaded) throw new ConfigError(`${options.checkpoint}: no checkpoint`, { path: 'checkpoint' });
  const run = loaded.run as { config: RunConfig };
  const source = run.config.train.source.find((s) => s.env === 'kuhn-poker');
  if (!source) throw new ConfigError(`${options.checkpoint}: not a Kuhn poker run`, { path: 'checkpoint' });
  const kuhn = source.options as { prompts?: 'rules' | 'compact' | 'pass-bet'; invalidRetries?: number };
  const config = {
    prompts: kuhn.prompts ?? 'rules',
    invalidRetries: kuhn.invalidRetries ?? 1,
    sampling: { temperature: run.config.policy.temperature, maxTokens: run.config.policy.maxTokens },
  };
  const trained = await frozenCheckpointClient({
    dir: options.checkpoint,
    maxTokens: config.sampling.maxTokens,
    seed: options.seed,
  });
  const opponents: [string, ModelClient][] = [
    ['uniform', new TablePolicyClient({ name: 'uniform', table: uniformKuhnPolicy(), seed: options.seed })],
    ['equilibrium', new TablePolicyClient({ name: 'equilibrium', table: kuhnEquilibrium(1 / 6), seed: options.seed + 1 })],
    ['self', trained],
  ];
  const taskset = kuhnTaskset();
  const results: MatchResult[] = [];
  for (const [name, opponent] of opponents) {
    const payoffs: [number[], number[]] = [[], []];
    let forfeits = 0;
    for (const seat of [0, 1] as const) {
      const client = new SeatRouterClient(seat === 0 ? [trained, opponent] : [opponent, trained]);
      const env = await Env.create({
        definition: kuhnPokerEnv,
        config: {
          id: 'kuhn-poker',
          prompts: config.prompts,
          invalidRetries: config.invalidRetries,
          player0: { runtime: 'game' },
          player1: { runtime: 'game' },
        },
        run: {
          model: 'policy',
          client,
          sampling: { temperature: config.sampling.temperature, maxTokens: config.sampling.maxTokens },
        },
      });
      const episodes = await Promise.all(
        Array.from({ length: options.hands }, (_, i) =>
          env.runEpisode({ task: taskset.at(1_000_000 + i), group: { id: `eval-${i}`, index: 0 } }),
        ),
      );
      for (const e of episodes) {
        const trace = e.byAgent[seat === 0 ? 'player0' : 'player1']?.[0];
        payoffs[seat].push(trace?.rewards.payoff?.score ?? 0);
        if (trace?.metrics.forfeit === 1) forfeits++;
      }
    }
    results.push({
      opponent: name,
      hands: options.hands,
      asPlayer0: summarize(payoffs[0]),
      asPlayer1: summarize(payoffs[1]),
      forfeitRate: forfeits / (2 * options.hands),
    });
  }
  return results;
}
