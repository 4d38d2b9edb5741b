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
  | 'MalformedReplyError'
  | 'WireError'
  | 'TrainerError'
  | 'EngineError';

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
  // bare-error: the root of troupe's error kinds
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

/** One rejected field of a config: its key path and what is wrong with it. */
export interface ConfigIssue {
  /** Dotted key path as the config file spells it (`policy.d_model`, `train.source[0].ratio`). */
  path: string;
  /** What is wrong with the value. */
  message: string;
}

/**
 * A config or input was rejected at the door. The message names the field; `path` holds its key
 * path as the user wrote it (snake_case for a config file: `policy.d_model`; the option name for
 * an API call: `budgetMs`), and `issues` every rejected field when there were several.
 */
export class ConfigError extends TroupeError {
  /** Key path of the (first) rejected field, when known. */
  readonly path?: string;
  /** Every rejected field, when the config was checked as a whole. */
  readonly issues?: readonly ConfigIssue[];

  constructor(
    message: string,
    options: { path?: string; issues?: readonly ConfigIssue[]; cause?: unknown; statusCode?: number } = {},
  ) {
    super({ name: 'ConfigError', message, cause: options.cause, statusCode: options.statusCode });
    const path = options.path ?? options.issues?.[0]?.path;
    if (path !== undefined) this.path = path;
    if (options.issues !== undefined) this.issues = options.issues;
  }

  /** True when `value` is a `ConfigError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is ConfigError {
    return TroupeError.isKind(value, 'ConfigError');
  }

  /** @deprecated use `isInstance` (the same check). */
  static is(value: unknown): value is ConfigError {
    return TroupeError.isKind(value, 'ConfigError');
  }
}
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

/**
 * Data that crosses a process boundary breaks its format: a training sample, micro batch or rank
 * payload bound for prime-rl's trainer, a frame on its ZMQ socket, a file of another process.
 * `path` names the field when known (`samples[3].advantages`).
 */
export class WireError extends TroupeError {
  /** The field at fault, when known. */
  readonly path?: string;
  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super({ name: 'WireError', message, cause: options.cause });
    if (options.path !== undefined) this.path = options.path;
  }

  /** True when `value` is a `WireError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is WireError {
    return TroupeError.isKind(value, 'WireError');
  }
}

/**
 * The trainer could not do what it was asked: a batch longer than the context, weights or optimizer
 * state of the wrong shape, a trainer worker that failed, a step out of order. `step` when known.
 */
export class TrainerError extends TroupeError {
  /** The training step at fault, when known. */
  readonly step?: number;
  constructor(message: string, options: { step?: number; cause?: unknown } = {}) {
    super({ name: 'TrainerError', message, cause: options.cause });
    if (options.step !== undefined) this.step = options.step;
  }

  /** True when `value` is a `TrainerError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is TrainerError {
    return TroupeError.isKind(value, 'TrainerError');
  }
}

/**
 * A compute engine failed or is missing: onnxruntime or tfjs could not load or run a model, a
 * process group or PID namespace could not be made or emptied. (A sandbox's own failures are
 * {@link SandboxError}s.) `engine` names it when known.
 */
export class EngineError extends TroupeError {
  /** The engine at fault (`onnxruntime-node`, `unshare`, …), when known. */
  readonly engine?: string;
  constructor(message: string, options: { engine?: string; cause?: unknown } = {}) {
    super({ name: 'EngineError', message, cause: options.cause });
    if (options.engine !== undefined) this.engine = options.engine;
  }

  /** True when `value` is an `EngineError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is EngineError {
    return TroupeError.isKind(value, 'EngineError');
  }
}

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
