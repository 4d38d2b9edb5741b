// @troupe/prime-rl/policy: the tokenizer and the small decoder-only transformer (tfjs).
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
// The decoder-only policy model.
export { dense, PolicyModel } from './model.ts';
// The word tokenizer.
export { SPECIAL_TOKENS, type SpecialToken, TokenizerJsonSchema, type TokenizerJson, WordTokenizer } from './tokenizer.ts';
