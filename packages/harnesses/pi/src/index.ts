// @troupe/harness-pi: the harness and its plugin entry (`createHarness`, found by the harness id).
export { piModelsJson, PI_KEY_ENV, PI_SETTINGS_JSON, PiHarness, createHarness } from './pi-harness.ts';
