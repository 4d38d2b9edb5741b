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
  | 'InterceptionError';

/**
 * Base class of every error troupe raises on purpose. `isInstance` survives duplicate package
 * copies (it checks a global symbol, not the prototype chain).
 */
export class TroupeError extends Error {
  readonly [marker] = true;
  override readonly name: TroupeErrorType | string;
  /** HTTP status to relay, when the error has one (provider errors, interception refusals). */
  readonly statusCode?: number;

  constructor(options: { name: TroupeErrorType | string; message: string; cause?: unknown; statusCode?: number }) {
    super(options.message, { cause: options.cause });
    this.name = options.name;
    if (options.statusCode !== undefined) this.statusCode = options.statusCode;
  }

  static isInstance(value: unknown): value is TroupeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

function kind(name: TroupeErrorType) {
  return class extends TroupeError {
    constructor(message: string, options: { cause?: unknown; statusCode?: number } = {}) {
      super({ name, message, ...options });
    }
    static is(value: unknown): boolean {
      return TroupeError.isInstance(value) && value.name === name;
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
    return record;
  }
  return { type: 'Error', message: String(error) };
}
