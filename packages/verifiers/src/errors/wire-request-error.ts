import { TroupeError } from './troupe-error.ts';

/** A request the dialect rejects (malformed or of the wrong type): HTTP 400 naming the field. */
export class WireRequestError extends TroupeError {
  /** HTTP status of the refusal (400 unless given). */
  readonly status: number;
  /** The offending request field, when known. */
  readonly param: string | null;
  constructor(message: string, options: { status?: number; param?: string | null; cause?: unknown } = {}) {
    super({ name: 'WireRequestError', message, statusCode: options.status ?? 400, cause: options.cause });
    this.status = options.status ?? 400;
    this.param = options.param ?? null;
  }

  /** True when `value` is a `WireRequestError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is WireRequestError {
    return TroupeError.isKind(value, 'WireRequestError');
  }
}
