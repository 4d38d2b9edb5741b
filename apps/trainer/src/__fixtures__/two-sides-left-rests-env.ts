// The two-sides env in which seat `left` sits out task 1: with one group a step, step 2 has no
// trace for the policy that plays `left`, so that policy's trainer skips it and lags a step behind.
import { twoSidesEnvWhere } from './two-sides-env.ts';

/** `two-sides`, `left` resting on task 1. */
export default twoSidesEnvWhere({ leftSitsOut: (idx) => idx === 1 });
