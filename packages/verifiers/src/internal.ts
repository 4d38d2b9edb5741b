// `@troupe/verifiers/internal`: helpers troupe's own packages (runtimes, the trainer, prime-rl)
// share. Not part of the public API: names here change without a major version.

export { judgeCallsOf, type PriceTable, PriceTableSchema, usageCost } from './eval/pricing.ts';
export { activeMs } from './eval/summary.ts';
// The container-side relay tells the interception server which process made a call.
export { type CallerProcessFinder, registerRelayedCaller } from './interception/caller-process.ts';
// Wire and trace helpers shared by the trainer packages.
export { chatDialect } from './interception/dialects/chat.ts';
// The core model client's transport and retry policy, for troupe's other HTTP model calls (opd's endpoint teacher).
export { postJson } from './model/json-post.ts';
export { isRetryableStatus, RetryOptionsSchema, retryAfterMs, withRetry } from './model/retry.ts';
export { CreationLimiter, CreationLimitsSchema, type CreationSlot } from './runtime/creation-limiter.ts';
export {
  EXEC_PID_DIR,
  ExecOutputCollector,
  FRAMEWORK_PATH,
  FRAMEWORK_SH,
  guardExec,
  killCommand,
  wrapWithPidFile,
} from './runtime/exec-pid-wrapper.ts';
export { processExists } from './runtime/process-group.ts';
// Runtime plumbing shared by the runtime packages: exec guards, pid files, output limits, creation limits.
export { ApiKeyRuntimeOptionsSchema, apiKeyRuntimeEntry, runtimeOptionsTable } from './runtime/remote-runtime.ts';
export { DEFAULT_MAX_OUTPUT_BYTES, ExecRuntimeOptionsSchema, type RuntimeLogger } from './runtime/runtime-options.ts';
export { withoutSecrets } from './runtime/sandbox-env.ts';
export { shellQuote } from './runtime/sandbox-file-tree.ts';
export { EpisodeRecordSchema } from './trace/episode.ts';

// Run-file reading, pricing and summary helpers the viewer (@troupe/viewer) shares with the core.
export { openRunFile, readRunFileText, runFileLines } from './trace/run-file.ts';
export { sampledAdvantage } from './trace/trace-schema.ts';
// Small utilities.
export {
  type ConfigKeyOptions,
  camelConfigKey,
  normalizeConfigKeys,
  normalizeSet,
  normalizeSetPath,
  rejectPrototypeKeys,
  snakeConfigKey,
  snakeConfigKeys,
} from './util/config-keys.ts';
export { sleep } from './util/timeout.ts';
