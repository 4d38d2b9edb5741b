// The default run config (the file package.json names in troupe.defaultConfig).
export { DEFAULT_CONFIG } from './default-config.ts';
// The run report written beside a training run.
export { renderReport, writeReport, type ReportArtifact, type ReportInput } from './report.ts';
// Running a training job from a run config.
export { train, readMetrics, type StepMetrics, type TrainOptions, type TrainResult } from './run.ts';
// The run config: schema, reading and validation.
export {
  isTrainedRole,
  camelKeys,
  applySet,
  parseRunConfig,
  readRunConfigFile,
  RunConfigError,
  RoleBindingSchema,
  type RoleBinding,
  SourceConfigSchema,
  type SourceConfig,
  PolicySectionSchema,
  TrainerSectionSchema,
  RunConfigSchema,
  type RunConfig,
} from './run-config.ts';
