import type { Env, Episode, Message, ModelClient, Taskset } from '@troupe/verifiers';
import type { Algorithm, JsonValue } from '../algorithms/algorithm.ts';
import type { NamedWeight } from '../policy/config.ts';
import type { TrainingSample } from '../samples/training-sample.ts';
import type { OptimizerState } from '../trainer/optimizer-state.ts';
import type { OpponentPool } from './opponent-pool.ts';

/**
 * The weights of an external trainer as the orchestrator holds them, without reading them: the
 * step and its broadcast directory (`<outputDir>/broadcasts/step_<N>/`, in whatever format the
 * trainer writes — Hugging Face safetensors for prime-rl's), handed to the inference servers as
 * `weight_dir`.
 */
export interface WeightsHandle {
  step: number;
  dir: string;
}

/**
 * The trainer seen by the orchestrator: one optimizer step per batch, returning the new weights.
 * The embedded implementation is the tfjs trainer (in a worker thread); an external trainer
 * (prime-rl's, over the transport) implements the same three calls. `W` is what the orchestrator
 * holds of a policy version: the tensors (embedded engines), or an opaque {@link WeightsHandle}
 * it never reads (prime-rl's trainer and vLLM); `O` what a checkpoint holds of the optimizer.
 */
export interface Trainer<W = NamedWeight[], O = OptimizerState> {
  /** Human-readable backend, e.g. `wasm (worker thread)`. */
  readonly description: string;
  /** Trains on one batch for trainer step `step` (1-based: the step this batch produces). */
  step(options: { samples: readonly TrainingSample[]; step: number }): Promise<{ metrics: Record<string, number>; weights: W }>;
  /** Weights and optimizer state, for a checkpoint. */
  state(): Promise<{ weights: W; optimizer: O }>;
  close(): Promise<void>;
}

/** A policy at one version, for evaluators: a model client and, when the engine can, exact reply probabilities. */
export interface EvaluationPolicy {
  readonly version: number;
  readonly client: ModelClient;
  /**
   * Probability of each candidate reply's first token after the rendered conversation,
   * renormalised over the candidates (temperature 1). Absent when the engine cannot read logits.
   */
  replyProbabilities?(options: { messages: readonly Message[]; replies: readonly string[] }): Promise<number[]>;
  /** Sets the sampling RNG (opponent-pool snapshots are reseeded per rollout, so a resumed run samples identically). */
  loadRngState?(state: unknown): void;
}

/**
 * The inference engine seen by the orchestrator: serves the trainable policy to the sources'
 * envs through `client`, and takes new weights. The embedded implementation is the onnxruntime
 * policy client; an external one (vLLM with `/update_weights`) implements the same calls.
 */
export interface Inference<W = NamedWeight[]> {
  /** The client the envs' trainable roles call. */
  readonly client: ModelClient;
  /** Policy version now served. */
  readonly version: number;
  updateWeights(options: { weights: W; version: number }): Promise<void>;
  /**
   * A separate policy at the given weights for evaluation (does not disturb rollouts or their
   * RNG). An engine that serves one version at a time (vLLM) returns a client to its servers at
   * the version they hold, which it reports as `version`.
   */
  evaluationPolicy(options: { weights: W; version: number; seed: number }): Promise<EvaluationPolicy>;
  /** Sampling RNG state (saved with checkpoints so a resumed run samples identically). */
  rngState(): JsonValue;
  loadRngState(state: unknown): void;
  close?(): Promise<void>;
}

/** What an evaluator returns for one evaluation. */
export interface EvaluationResult {
  /** Metrics, logged under `eval/<source>/…`. */
  metrics: Record<string, number>;
  /** Files to write into the run directory (name → content), e.g. a policy table. */
  artifacts?: Record<string, string>;
}

/** A source's own evaluation (e.g. a game's exact exploitability, or accuracy on a probe set): `evaluate(policy) → metrics`. */
export interface Evaluator {
  /**
   * `policy`: the policy the source's trainable roles play (with several, a client that routes each
   * role's calls and reads no reply probabilities). `roles`: each role played by a policy of the
   * run, its own policy at the step's weights (absent for roles bound to a frozen model, checkpoint
   * or pool), so an evaluator can read each seat from the policy bound to it.
   */
  evaluate(context: {
    policy: EvaluationPolicy;
    step: number;
    roles?: Readonly<Record<string, EvaluationPolicy>>;
  }): Promise<EvaluationResult>;
  /** Running state (e.g. an average policy), saved with checkpoints. */
  state?(): JsonValue;
  loadState?(state: unknown): void;
}

/**
 * What an env module may declare for training, besides its definition (exported as `training`,
 * or attached to the definition as `definition.training`). Every hook is optional.
 */
export interface TrainingHooks<O = Record<string, unknown>> {
  /** Words the embedded tokenizer must know (messages the env writes at run time), in order. */
  vocabulary?(options: O): readonly string[] | undefined;
  /** Restricts the embedded policy's reply head to these words (plus `<eos>` when replies are longer than one token). */
  replyVocabulary?(options: O): readonly string[] | undefined;
  /** Longest conversation in tokens (prompt and reply), given a renderer of the embedded chat template. */
  maxSequence?(context: {
    options: O;
    renderLength: (messages: readonly Message[]) => number;
    maxTokens: number;
  }): number | undefined;
  /** The source's evaluator, built once per run. */
  evaluator?(options: O): Evaluator | undefined;
}

/** One train or eval source: an env with its taskset, role bindings and algorithm. */
export interface TrainSource {
  /** Name in metric keys and checkpoints (the env id unless several sources share it). */
  name: string;
  env: Env;
  taskset: Taskset;
  algorithm: Algorithm;
  /** Episodes per group (rollouts of one task). */
  groupSize: number;
  /** Share of each step's groups (mixed by ratio across sources). */
  ratio: number;
  /** Roles bound to a frozen model or checkpoint: their traces are made untrainable on arrival, whatever the env sets. */
  frozenRoles: ReadonlySet<string>;
  /**
   * The trainable policy each role plays, by role (a role not listed plays `main`): with several
   * policies, each trains on the traces of the roles bound to it.
   */
  policies?: Readonly<Record<string, string>>;
  /** Roles played by an opponent pool of a trainable policy's snapshots (the pool's `of`; each role also in `frozenRoles`). */
  pools?: readonly { role: string; pool: OpponentPool }[];
  evaluator?: Evaluator;
}

/** One line of `metrics.jsonl`. */
export type StepMetrics = Record<string, number | string | null>;

/** Episodes of one scored group and the policy version they were dispatched with. */
export interface ScoredGroup {
  source: string;
  version: number;
  episodes: Episode[];
}
