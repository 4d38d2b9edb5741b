import { randomUUID } from 'node:crypto';
import { type ModelCallOptions, type ModelClient, type ModelRequest, type ModelResponse, ProviderError } from '@troupe/verifiers';
import type { PolicyConfig } from '../policy/config.ts';
import type { WordTokenizer } from '../policy/tokenizer.ts';
import { MicroBatcher } from './micro-batcher.ts';
import { OnnxPolicy } from './onnx-policy.ts';
import { Rng } from './rng.ts';
import { sampleToken } from './sampling.ts';

export interface PolicyModelClientOptions {
  /** Model name reported in responses. */
  model?: string;
  tokenizer: WordTokenizer;
  config: PolicyConfig;
  /** The ONNX graph of the initial weights (`exportOnnx`). */
  onnx: Uint8Array;
  /** Policy version of the initial weights (default 0). */
  version?: number;
  /** Rows per forward pass (default 256). */
  maxBatch?: number;
  /** Wait for more requests before a forward pass, ms (default 0 = next macrotask). */
  maxWaitMs?: number;
  /** Completion length when the request sets no `maxTokens` (default 4). */
  maxTokens?: number;
  /** Seed of the sampling stream. */
  seed?: number;
  /** onnxruntime intra-op threads (default 1). */
  threads?: number;
}

/**
 * The policy as a `ModelClient`: renders messages with the tokenizer's chat template, samples
 * a completion token by token (temperature from the request, default 1) until `<eos>` or
 * `maxTokens`, and returns text, prompt and completion token ids and per-token logprobs.
 * Concurrent requests share forward passes through a micro-batcher. `updateWeights` swaps in
 * a new graph without dropping requests in flight: a forward pass that started on the old
 * session finishes on it; the next one uses the new weights.
 */
export class PolicyModelClient implements ModelClient {
  readonly model: string;
  readonly tokenizer: WordTokenizer;
  readonly config: PolicyConfig;
  readonly rng: Rng;
  private session: OnnxPolicy;
  private readonly batcher: MicroBatcher;
  private readonly maxTokens: number;
  private readonly threads: number;
  /** Policy version of the weights that serve the next forward pass. */
  version: number;

  private constructor(options: PolicyModelClientOptions, session: OnnxPolicy) {
    this.model = options.model ?? 'policy';
    this.tokenizer = options.tokenizer;
    this.config = options.config;
    this.session = session;
    this.version = options.version ?? 0;
    this.maxTokens = options.maxTokens ?? 4;
    this.threads = options.threads ?? 1;
    this.rng = new Rng(options.seed ?? 0);
    this.batcher = new MicroBatcher({
      policy: () => this.session,
      maxBatch: options.maxBatch ?? 256,
      maxWaitMs: options.maxWaitMs ?? 0,
      vocabSize: options.config.vocabSize,
    });
  }

  static async create(options: PolicyModelClientOptions): Promise<PolicyModelClient> {
    const session = await OnnxPolicy.load({
      model: options.onnx,
      vocabSize: options.config.vocabSize,
      threads: options.threads ?? 1,
    });
    return new PolicyModelClient(options, session);
  }

  get stats() {
    return this.batcher.stats;
  }

  /** Swaps in new weights (an ONNX graph); requests in flight continue. */
  async updateWeights(options: { onnx: Uint8Array; version: number }): Promise<void> {
    const next = await OnnxPolicy.load({ model: options.onnx, vocabSize: this.config.vocabSize, threads: this.threads });
    const old = this.session;
    this.session = next;
    this.version = options.version;
    // The old session is dropped to the GC once no forward pass holds it (onnxruntime frees it then);
    // releasing it eagerly could fail a pass still running on it.
    void old;
  }

  /** Logits of the next token after `tokens` (batched with concurrent callers). */
  nextLogits(tokens: readonly number[]): Promise<Float32Array> {
    return this.batcher.next(tokens);
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const prompt = this.tokenizer.renderChat({ messages: request.messages });
    const limit = this.config.contextLength;
    if (prompt.length >= limit) {
      throw new ProviderError(`prompt of ${prompt.length} tokens exceeds the maximum context length of ${limit} tokens`, {
        statusCode: 400,
      });
    }
    const maxTokens = Math.min(request.sampling.maxTokens ?? this.maxTokens, limit - prompt.length);
    const temperature = request.sampling.temperature ?? 1;
    const tokens = [...prompt];
    const completion: number[] = [];
    const logprobs: number[] = [];
    let finishReason: ModelResponse['finishReason'] = 'length';
    while (completion.length < maxTokens) {
      options.signal?.throwIfAborted();
      const logits = await this.batcher.next(tokens);
      const { token, logprob } = sampleToken({ logits, temperature, rng: this.rng });
      completion.push(token);
      logprobs.push(logprob);
      tokens.push(token);
      if (token === this.tokenizer.eosId) {
        finishReason = 'stop';
        break;
      }
    }
    return {
      id: `policy-${randomUUID()}`,
      model: request.model || this.model,
      message: { role: 'assistant', content: this.tokenizer.decode(completion) },
      finishReason,
      usage: { promptTokens: prompt.length, completionTokens: completion.length },
      promptTokenIds: prompt,
      completionTokenIds: completion,
      completionLogprobs: logprobs,
    };
  }
}
