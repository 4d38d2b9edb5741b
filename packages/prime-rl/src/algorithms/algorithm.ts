import type { Episode } from '@troupe/verifiers';

/**
 * What an algorithm may ask about the env it is about to score, before any episode arrives
 * (`Algorithm.validateEnv`). Built from the env config by whoever wires the training run.
 */
export interface EnvInfo {
  /** Env id: the key RAE keeps its baselines under. */
  id: string;
  /** Role (agent) names of the env, e.g. `['proposer', 'solver']` or `['player0', 'player1']`. */
  roles: readonly string[];
  /** Roles whose traces train (`agent.trainable`); all roles when absent. */
  trainableRoles?: readonly string[];
  /** True for a zero-sum game (the rewards of one episode add up to 0), e.g. a two-player card game. */
  zeroSum?: boolean;
}

/**
 * The loss component that trains an algorithm's sampled tokens (prime-rl's `action_loss_type`,
 * `src/prime_rl/orchestrator/algo/base.py:53` at 559b447): `rl` (the policy-gradient loss on
 * advantages), `ce` (cross-entropy on the tokens: `sft`) or `ref_kl` (reverse KL to a teacher's
 * logprobs: `opd`).
 */
export type ActionLoss = 'rl' | 'ce' | 'ref_kl';

/**
 * A frozen model an algorithm scores tokens with (opd's teacher): a run checkpoint of an embedded
 * policy, or a served model behind an endpoint that prefill-scores token ids (prime-rl
 * `FrozenModelConfig`, `packages/prime-rl-configs/src/prime_rl/configs/algorithm.py:46-66` at
 * 559b447). `apiKeyVar` names the environment variable the key is read from (never the key).
 */
export type FrozenModelReference =
  | { checkpoint: string }
  | { baseUrl: string; model: string; apiKeyVar?: string | undefined; timeoutMs?: number | undefined };

/** Prefill-scores token sequences under a frozen model. */
export interface LogprobScorer {
  /** One logprob per token of `tokenIds` under the model (temperature 1), 0 for the first token (it has no context). */
  score(tokenIds: readonly number[]): Promise<number[]>;
}

/** What an algorithm's `setup` may use: connections to frozen models, made by whoever wires the run. */
export interface AlgorithmContext {
  /** Connects a frozen model (prime-rl `Algorithm.connect`, `src/prime_rl/orchestrator/algo/base.py:62-66`). */
  connect(reference: FrozenModelReference): Promise<LogprobScorer>;
}

/** A JSON value: what `Algorithm.state()` returns and `loadState()` accepts. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A credit-assignment estimator: turns finished episodes into advantages on the sampled tokens
 * of their trainable traces (use {@link assignAdvantages} and {@link iterTrainableTraces}).
 *
 * Hooks run on the orchestrator and mutate the traces in place. A hook may be synchronous or
 * return a promise (e.g. to call a teacher model).
 */
export interface Algorithm {
  /** The config `type` this algorithm was built from (`grpo`, `rae`, … or your own). */
  readonly type: string;
  /**
   * The loss component its sampled tokens train (default `rl`). With `ce` or `ref_kl` the
   * samples get rl weight 0 and weight 1 in that component on their sampled tokens, and the
   * zero-advantage filter leaves them alone (prime-rl `stamp_loss_routing`,
   * `src/prime_rl/orchestrator/algo/routing.py:67-84`).
   */
  readonly actionLoss?: ActionLoss;
  /** Connects what the algorithm needs before rollouts start (e.g. opd's teacher). */
  setup?(context: AlgorithmContext): Promise<void>;
  /**
   * Refuses an env this algorithm makes no sense on, with an error naming a better algorithm.
   * Called once per train env before rollouts start.
   */
  validateEnv?(env: EnvInfo): void;
  /**
   * What the orchestrator does with a group when some of its episodes are more than
   * `maxOffPolicySteps` behind: `rescore` drops them and runs {@link Algorithm.scoreGroup} again
   * over the others (a group baseline), `keep` drops them and keeps the others' advantages
   * (per-trace baselines), `group` (default) drops the whole group (it needs every episode).
   */
  readonly staleEpisodes?: 'rescore' | 'keep' | 'group';
  /** Called when one episode arrives (only if it has a trainable trace): rollout-local work. */
  scoreEpisode?(episode: Episode): void | Promise<void>;
  /**
   * Called once per group, when its `groupSize` episodes (all for one task) are in, in group
   * order (`episode.group.index`), and only if some trace is trainable.
   */
  scoreGroup(episodes: readonly Episode[]): void | Promise<void>;
  /** A JSON snapshot of the algorithm's running state, saved with the trainer checkpoint. */
  state?(): JsonValue;
  /** Restores a snapshot from {@link Algorithm.state}; throws naming the bad field. */
  loadState?(state: unknown): void;
}
