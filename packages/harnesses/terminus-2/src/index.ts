// @troupe/harness-terminus-2: the harness and its plugin entry (`createHarness`, found by the harness id).
export { Terminus2Harness, createHarness } from './terminus-2-harness.ts';
