// @troupe/harness-mini-swe-agent: the harness and its plugin entry (`createHarness`, found by the harness id).
export { MiniSweAgentHarness, createHarness } from './mini-swe-agent-harness.ts';
