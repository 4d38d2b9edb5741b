// The embedded engines, loaded on first use.
export {
  embeddedPolicy,
  embeddedTrainer,
  embeddedInference,
  loadEmbeddedCheckpoint,
  frozenCheckpointClient,
  checkpointEvaluationPolicy,
  splitCheckpointPolicy,
  trainerStepMetrics,
  type PolicySourceInfo,
  type EmbeddedPolicyOptions,
  type EmbeddedRunCheckpoint,
  initWeights,
} from './embedded.ts';
// Routing roles to models.
export { ModelRouter } from './model-router.ts';
// Opponent pools.
export {
  withPoolDraws,
  hashUniform,
  hashSeed,
  OpponentPoolConfigSchema,
  type OpponentPoolConfigInput,
  type OpponentPoolConfig,
  type PoolSnapshot,
  OpponentPool,
} from './opponent-pool.ts';
// The training loop.
export {
  allocateGroups,
  EmptyBatchesError,
  type EmptyBatchReason,
  type EvalSource,
  ReplyProbabilitiesUnavailable,
  DEFAULT_STOP_AFTER_FAILED_STEPS,
  TrainingStoppedError,
  MAX_CONSECUTIVE_EMPTY_BATCHES,
  sourceMetrics,
  type OrchestratorCheckpoint,
  type PolicyCheckpoint,
  type PolicyEngines,
  type OrchestratorState,
  type OrchestratorOptions,
  type OrchestratorResult,
  Orchestrator,
} from './orchestrator.ts';
// Schedules (learning rate, budgets).
export { scheduledLr, scheduledBeta1, scheduledRefKlTau, scheduledStepOptions, type TrainerSchedule } from './schedule.ts';
// Trainer and inference interfaces the loop drives.
export type {
  WeightsHandle,
  Trainer,
  EvaluationPolicy,
  Inference,
  EvaluationResult,
  Evaluator,
  TrainingHooks,
  TrainSource,
  StepMetrics,
  ScoredGroup,
} from './types.ts';
