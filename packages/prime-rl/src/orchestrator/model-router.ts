import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '@troupe/verifiers';

/**
 * Routes each request by its `model` name: a name bound to a frozen client (an OpenAI-compatible
 * endpoint, a frozen checkpoint) goes there; every other request goes to the trainable policy.
 * The envs of a source are built with this client and each role's `model` set to its binding.
 */
export class ModelRouter implements ModelClient {
  readonly model: string;
  private readonly main: () => ModelClient;
  private readonly frozen: ReadonlyMap<string, ModelClient>;

  constructor(options: { main: () => ModelClient; frozen?: ReadonlyMap<string, ModelClient>; model?: string }) {
    this.main = options.main;
    this.frozen = options.frozen ?? new Map();
    this.model = options.model ?? 'main';
  }

  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    const frozen = this.frozen.get(request.model);
    // A frozen endpoint is asked for its own model name, not the routing name.
    return frozen ? frozen.complete({ ...request, model: frozen.model }, options) : this.main().complete(request, options);
  }
}
