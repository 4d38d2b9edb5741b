// @troupe/harness-browser-use: the harness and its plugin entry (`createHarness`, found by the harness id).
export { BrowserUseHarness, createHarness } from './browser-use-harness.ts';
