// @troupe/prime-rl/policy: the tokenizer, the policy's config and weights, the tfjs backend. The
// tfjs-level model (`PolicyModel`) stays inside the package: the public declarations name no tfjs
// type (tfjs's own need DOM types, so a user's `tsc` without skipLibCheck would fail).
export { initTfBackend } from './backend.ts';
// Policy model config.
export {
  weightShapes,
  initWeights,
  outputMask,
  PolicyConfigSchema,
  type PolicyConfig,
  type PolicyConfigInput,
  type NamedWeight,
  LAYER_NORM_EPS,
  MASKED_LOGIT,
} from './config.ts';
// The word tokenizer.
export { SPECIAL_TOKENS, type SpecialToken, TokenizerJsonSchema, type TokenizerJson, WordTokenizer } from './tokenizer.ts';
