// @troupe/harness-pool: the harness and its plugin entry (`createHarness`, found by the harness id).
export { PoolHarness, createHarness } from './pool-harness.ts';
