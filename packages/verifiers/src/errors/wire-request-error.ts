/** A request the dialect rejects (malformed or of the wrong type): HTTP 400 naming the field. */
export class WireRequestError extends Error {
  override readonly name = 'WireRequestError';
  readonly status: number;
  readonly param: string | null;
  constructor(message: string, options: { status?: number; param?: string | null } = {}) {
    super(message);
    this.status = options.status ?? 400;
    this.param = options.param ?? null;
  }
}
