import { TroupeError } from './troupe-error.ts';

/** A model server's reply could not be used (a body that is not a chat completion). */
export class MalformedReplyError extends TroupeError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super({ name: 'MalformedReplyError', message, cause: options.cause });
  }

  /** True when `value` is a `MalformedReplyError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is MalformedReplyError {
    return TroupeError.isKind(value, 'MalformedReplyError');
  }
}
