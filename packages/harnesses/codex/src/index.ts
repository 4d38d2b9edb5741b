// @troupe/harness-codex: the harness and its plugin entry (`createHarness`, found by the harness id).
export {
  codexConfigToml,
  codexMcpToml,
  nativeCodex,
  CODEX_KEY_ENV,
  CodexHarness,
  CODEX_PROGRAM,
  createHarness,
} from './codex-harness.ts';
