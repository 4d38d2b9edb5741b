// @troupe/harness-hermes-agent: the harness and its plugin entry (`createHarness`, found by the harness id).
export { HermesAgentHarness, createHarness } from './hermes-agent-harness.ts';
