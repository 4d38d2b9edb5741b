import { TroupeError } from '@troupe/verifiers';

/**
 * An inference server does not serve the model the run asks for (`[inference] model`): its
 * `GET /v1/models` lists other names. vLLM would answer every chat request with 404 "The model
 * `<name>` does not exist", so the run stops before its first step, naming the server and the
 * names it serves (prime-rl checks the same at start: `src/prime_rl/utils/client.py:159-172`,
 * `maybe_check_has_model`, at 559b447).
 */
export class ServedModelError extends TroupeError {
  /** The base URL whose `/v1/models` was asked. */
  readonly baseUrl: string;
  /** The model name the run sends. */
  readonly model: string;
  /** The names the server serves (`data[].id`). */
  readonly served: string[];

  constructor(options: { baseUrl: string; model: string; served: string[]; cause?: unknown }) {
    super({
      name: 'ServedModelError',
      message: `inference.model: ${options.baseUrl} does not serve "${options.model}"; it serves ${
        options.served.length ? options.served.map((name) => `"${name}"`).join(', ') : 'no model'
      } (set [inference] model to the name vLLM serves: --served-model-name, or the model path)`,
      cause: options.cause,
    });
    this.baseUrl = options.baseUrl;
    this.model = options.model;
    this.served = options.served;
  }

  /** True when `value` is a `ServedModelError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is ServedModelError {
    return TroupeError.isKind(value, 'ServedModelError');
  }
}
