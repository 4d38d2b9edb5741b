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
    return frozen ? frozen.complete(request, options) : this.main().complete(request, options);
  }
}
