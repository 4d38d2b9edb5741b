const marker = Symbol.for('troupe.error');

/** Stable error kinds, recorded as `type` on a trace error. */
export type TroupeErrorType =
  | 'ConfigError'
  | 'ProviderError'
  | 'SandboxError'
  | 'HarnessError'
  | 'EnvError'
  | 'LimitError'
  | 'RolloutConcludedError'
  | 'ParseError'
  | 'RewardError'
  | 'TimeoutError'
  | 'InterceptionError'
  | 'WireRequestError'
  | 'MalformedReplyError';

/** True when `value` carries the global marker `Symbol.for(key)` (any copy of this package sets the same one). */
function hasMarker(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[Symbol.for(key)] === true;
}

/**
 * Base class of every error troupe raises on purpose. It has a stable `name` (its kind, recorded
 * as `type` on a trace), an optional `cause`, and a static `isInstance` that survives duplicate
 * package copies: it checks a marker under a global symbol (`Symbol.for`), not the prototype
 * chain, so an error made by another installed copy of `@troupe/verifiers` still matches.
 */
export class TroupeError extends Error {
  readonly [marker] = true;
  override readonly name: TroupeErrorType | string;
  /** HTTP status to relay, when the error has one (provider errors, interception refusals). */
  readonly statusCode?: number;

  constructor(options: { name: TroupeErrorType | string; message: string; cause?: unknown; statusCode?: number }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = options.name;
    if (options.statusCode !== undefined) this.statusCode = options.statusCode;
    // Each kind's own marker, so that `ConfigError.isInstance` matches config errors only.
    Object.defineProperty(this, Symbol.for(`troupe.error.${options.name}`), { value: true, enumerable: false });
  }

  /** True for any troupe error, from this copy of the package or another. */
  static isInstance(value: unknown): value is TroupeError {
    return hasMarker(value, 'troupe.error');
  }

  /** True when `value` is a troupe error of the kind `name`, from any copy of the package. */
  static isKind(value: unknown, name: TroupeErrorType | string): value is TroupeError {
    return hasMarker(value, 'troupe.error') && hasMarker(value, `troupe.error.${name}`);
  }
}

function kind<N extends TroupeErrorType>(name: N) {
  return class extends TroupeError {
    constructor(message: string, options: { cause?: unknown; statusCode?: number } = {}) {
      super({ name, message, ...options });
    }
    /** True when `value` is an error of this kind, from this copy of the package or another. */
    static override isInstance(value: unknown): value is TroupeError {
      return TroupeError.isKind(value, name);
    }
    /** @deprecated use `isInstance` (the same check). */
    static is(value: unknown): value is TroupeError {
      return TroupeError.isKind(value, name);
    }
  };
}

/** A config or input was rejected at the door; the message names the field. */
export class ConfigError extends kind('ConfigError') {}
/** The model server answered with an error or an unusable body. */
export class ProviderError extends kind('ProviderError') {}
/** A sandbox could not be created, died, or refused an operation. */
export class SandboxError extends kind('SandboxError') {}
/** The harness program failed (non-zero exit, timeout) while its sandbox was alive. */
export class HarnessError extends kind('HarnessError') {}
/** An Env hook (`setup`, `run`, `finalize`) threw. */
export class EnvError extends kind('EnvError') {}
/** A rollout limit (turns, tokens) was reached; interception answers 400 "rollout stopped: <why>". */
export class LimitError extends kind('LimitError') {}
/** A request arrived after its rollout concluded (HTTP 409). */
export class RolloutConcludedError extends kind('RolloutConcludedError') {}
/** A model reply or file could not be parsed into what the env needs. */
export class ParseError extends kind('ParseError') {}
/** A reward or metric function threw. */
export class RewardError extends kind('RewardError') {}
/** A stage ran past its deadline. */
export class TimeoutError extends kind('TimeoutError') {}
/** The interception server could not serve a rollout (not started, or closed while a call was in flight). */
export class InterceptionError extends kind('InterceptionError') {}

/** Turns anything thrown into the `{type, message}` record stored on traces and episodes. */
export function errorRecord(error: unknown): { type: string; message: string; statusCode?: number; stack?: string } {
  if (error instanceof Error) {
    const record: { type: string; message: string; statusCode?: number; stack?: string } = {
      type: error.name && error.name !== 'Error' ? error.name : 'Error',
      message: error.message,
    };
    const status = (error as { statusCode?: unknown; status?: unknown }).statusCode ?? (error as { status?: unknown }).status;
    if (typeof status === 'number') record.statusCode = status;
    if (error.stack) record.stack = error.stack.split('\n').slice(0, 8).join('\n');
    // A wrapper (EnvError, RewardError, …) around the user's own error: the user's stack, naming
    // their file and line, follows the wrapper's as `Caused by:`.
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.stack) {
      const caused = `Caused by: ${cause.stack.split('\n').slice(0, 8).join('\n')}`;
      record.stack = record.stack ? `${record.stack}\n${caused}` : caused;
    }
    return record;
  }
  return { type: 'Error', message: String(error) };
}
