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
