// `@troupe/env-kuhn-poker`: two-seat Kuhn poker as a troupe env. `--env kuhn-poker` (or
// `env = "kuhn-poker"` in a run config) finds this package by its name; the module's default
// export is the env, `training` its training hooks (the exact NashConv evaluator), `opponents`
// its fixed opponents.

// The env, its options and taskset.
export {
  kuhnPokerEnv,
  kuhnPokerEnv as default,
  kuhnTaskset,
  KuhnPokerOptionsSchema,
  type KuhnPokerOptions,
  type KuhnTraceInfo,
} from './env.ts';
// The game: cards, actions, information sets, policy tables and their exact evaluation.
export {
  KUHN_INFO_SETS,
  type KuhnAction,
  type KuhnCard,
  type KuhnInfoSet,
  type KuhnPolicyTable,
  kuhnEquilibrium,
  kuhnExpectedPayoff,
  kuhnInfoSetKey,
  kuhnLegalActions,
  kuhnNashConv,
  uniformKuhnPolicy,
} from './game.ts';
// The messages a seat sees, read back.
export { kuhnReadSeat, type KuhnPromptStyle } from './prompts.ts';
// Training hooks: the tokenizer's words, the longest conversation, the exact NashConv evaluator.
export { kuhnTraining, kuhnTraining as training, kuhnEvaluator, kuhnPolicyTable } from './training.ts';
// Fixed opponents and table tools.
export {
  kuhnOpponents,
  kuhnOpponents as opponents,
  kuhnTablePlayer,
  type KuhnTablePlayer,
  TablePolicyClient,
} from './table-client.ts';
