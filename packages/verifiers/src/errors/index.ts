/**
 * troupe's error model, stated once (docs/errors.md has the table of kinds).
 *
 * - Everything troupe throws on purpose is a {@link TroupeError}: a stable `name` (its kind,
 *   recorded as `type` on a trace), the message, an optional `cause`, and structured fields of its
 *   kind next to the message: `path` on a {@link ConfigError} (the key path as the config file
 *   spells it, `policy.d_model`) and on a {@link WireError}, `status`/`param` on a
 *   {@link WireRequestError}, `step` on a {@link TrainerError}, `engine` on an {@link EngineError}.
 * - The kinds: input and config (`ConfigError`), the model server (`ProviderError`,
 *   `MalformedReplyError`), sandboxes and engines (`SandboxError`, `EngineError`), one episode's
 *   stages (`HarnessError`, `EnvError`, `ParseError`, `RewardError`, `TimeoutError`, `LimitError`),
 *   interception and its dialects (`InterceptionError`, `RolloutConcludedError`,
 *   `WireRequestError`), data between processes (`WireError`) and the trainer (`TrainerError`).
 *   Other packages subclass `TroupeError` for their own kinds (prime-rl's `CheckpointError`).
 * - Test a kind with its static `isInstance`, never `instanceof`: it matches errors made by another
 *   installed copy of the package too.
 * - A package's `src` throws no bare `Error`, `RangeError` or `TypeError`
 *   (`tooling/scripts/check-errors.mjs`). The one exception, an assertion that only a bug in troupe
 *   can trip or a contract a caller tests by class (fetch's `TypeError`), carries the marker comment
 *   `// bare-error: <why>` on its line or the line above.
 * @module
 */
export * from './malformed-reply-error.ts';
export * from './troupe-error.ts';
export * from './wire-request-error.ts';
