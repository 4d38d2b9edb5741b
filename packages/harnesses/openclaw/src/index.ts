// @troupe/harness-openclaw: the harness and its plugin entry (`createHarness`, found by the harness id).
export { openClawConfigJson, parseEnvelope, OpenClawHarness, createHarness } from './openclaw-harness.ts';
