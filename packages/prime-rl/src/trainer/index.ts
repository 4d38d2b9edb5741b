// @troupe/prime-rl/trainer: loss, optimizer, checkpoints and the worker-thread trainer (tfjs).
export {
  writeCheckpointFiles,
  saveCheckpoint,
  commitCheckpoint,
  resolveCheckpointDir,
  findRunCheckpoint,
  readCheckpointFile,
  loadCheckpoint,
  CheckpointError,
  CheckpointMetaSchema,
  type CheckpointMeta,
  CheckpointManifestSchema,
  type CheckpointManifest,
  CHECKPOINT_MANIFEST,
  CHECKPOINT_VERSIONS_DIR,
  CHECKPOINT_POINTER,
  type Checkpoint,
  type CheckpointCommitStage,
} from './checkpoint.ts';
// Trainer config.
export {
  TrainerConfigSchema,
  type TrainerConfig,
  type TrainerConfigInput,
  type StepOptions,
  type TrainRow,
  type TrainMetrics,
} from './config.ts';
// The trainer in a worker thread.
export { localTrainer, workerTrainer, type TrainerInit, type TrainerHandle } from './handle.ts';
// The optimizer state a trainer resumes from. The tfjs-level trainer (`Trainer`, `policyLoss`,
// `lengthBuckets`, `stepFlops` in trainer.ts) stays inside the package: the public declarations
// reach no tfjs declaration (tfjs's own need DOM types, so a user's `tsc` without skipLibCheck would
// fail); a user trains through `localTrainer` / `workerTrainer`.
export type { OptimizerState } from './optimizer-state.ts';
