// @troupe/harness-rlm: the harness and its plugin entry (`createHarness`, found by the harness id).
export { RlmHarness, createHarness } from './rlm-harness.ts';
