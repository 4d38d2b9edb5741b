// @troupe/harness-kimi-code: the harness and its plugin entry (`createHarness`, found by the harness id).
export { KimiCodeHarness, createHarness } from './kimi-code-harness.ts';
