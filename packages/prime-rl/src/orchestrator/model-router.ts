import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '@troupe/verifiers';

/**
 * Routes each request by its `model` name: a name bound to a frozen client (an OpenAI-compatible
 * endpoint, a frozen checkpoint) goes there; a name of a trainable policy (`policies`) goes to
 * that policy; every other request goes to the main trainable policy. The envs of a source are
 * built with this client and each role's `model` set to its binding.
 */
export class ModelRouter implements ModelClient {
  readonly model: string;
  private readonly main: () => ModelClient;
  private readonly frozen: ReadonlyMap<string, ModelClient>;
  private readonly policies: (name: string) => ModelClient | null;

  constructor(options: {
    main: () => ModelClient;
    frozen?: ReadonlyMap<string, ModelClient>;
    /** The client of the trainable policy a model name names (null: not a policy name; `main` then serves it). */
    policies?: (name: string) => ModelClient | null;
    model?: string;
  }) {
    this.main = options.main;
    this.frozen = options.frozen ?? new Map();
    this.policies = options.policies ?? (() => null);
    this.model = options.model ?? 'main';
  }

  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    const frozen = this.frozen.get(request.model);
    // A frozen endpoint is asked for its own model name, not the routing name.
    if (frozen) return frozen.complete({ ...request, model: frozen.model }, options);
    return (this.policies(request.model) ?? this.main()).complete(request, options);
  }
}
