// `@troupe/verifiers/kuhn`: the Kuhn poker showcase env, its game and exact evaluation, apart
// from the core's root names (the trainer's Kuhn self-play and table tools use them).

export { kuhnPokerEnv, kuhnTaskset } from './env/builtin/kuhn-poker/env.ts';
export {
  KUHN_INFO_SETS,
  type KuhnAction,
  type KuhnCard,
  type KuhnPolicyTable,
  kuhnEquilibrium,
  kuhnInfoSetKey,
  kuhnLegalActions,
  uniformKuhnPolicy,
} from './env/builtin/kuhn-poker/game.ts';
export { kuhnReadSeat } from './env/builtin/kuhn-poker/prompts.ts';
export { kuhnTraining } from './env/builtin/kuhn-poker/training.ts';
