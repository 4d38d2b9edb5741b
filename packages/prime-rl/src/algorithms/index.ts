// The algorithm interface.
export type {
  EnvInfo,
  JsonValue,
  Algorithm,
  ActionLoss,
  AlgorithmContext,
  FrozenModelReference,
  LogprobScorer,
} from './algorithm.ts';
// Teacher logprobs on sampled nodes (opd).
export { assignReferenceLogprobs, referenceLogprobsOf } from './reference-logprobs.ts';
// SFT and on-policy distillation.
export { SftRepliesSchema, type SftReplies, SftConfigSchema, type SftConfig, Sft } from './sft.ts';
export { TeacherSchema, OpdConfigSchema, type OpdConfig, Opd } from './opd.ts';
// Assigning advantages to traces.
export { assignAdvantages, clearAdvantages } from './assign-advantages.ts';
// Group scoring.
export { type GroupScorerOptions, GroupScorer } from './group-scorer.ts';
// GRPO.
export { LinearLengthPenaltySchema, type LinearLengthPenalty, GrpoConfigSchema, type GrpoConfig, Grpo } from './grpo.ts';
// Hierarchical GRPO.
export { HierarchicalGrpoConfigSchema, type HierarchicalGrpoConfig, HierarchicalGrpo } from './hierarchical-grpo.ts';
// MaxRL.
export { MaxRlConfigSchema, type MaxRlConfig, MaxRl } from './max-rl.ts';
// RAE.
export { RaeConfigSchema, type RaeConfig, RaeStateSchema, type RaeState, Rae } from './rae.ts';
// Algorithms by type name.
export {
  registerAlgorithm,
  algorithmTypes,
  createAlgorithm,
  AlgorithmConfigSchema,
  type AlgorithmConfig,
  type AlgorithmConfigInput,
  type AlgorithmDefinition,
} from './registry.ts';
// Which traces train.
export {
  maskedCount,
  sampledTokenCount,
  hasSampledToken,
  hasSampledTokens,
  isTrainableTrace,
  iterTrainableTraces,
  trainableTraces,
  hasTrainableTrace,
  markFailedEpisode,
  traceReward,
} from './trainable-traces.ts';
