import { randomUUID } from 'node:crypto';
import {
  type Message,
  type ModelCallOptions,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  ProviderError,
} from '@troupe/verifiers';
import type { PolicyConfig } from '../policy/config.ts';
import type { WordTokenizer } from '../policy/tokenizer.ts';
import { type BatchRequest, MicroBatcher } from './micro-batcher.ts';
import { OnnxPolicy, type OnnxRuntimeChoice } from './onnx-policy.ts';
import { Rng } from './rng.ts';
import { sampleToken } from './sampling.ts';

/**
 * Options of `new PolicyModelClient(options)`: the policy (tokenizer, config, initial ONNX weights)
 * and how it batches and samples. Sizes are in rows and tokens, waits in milliseconds.
 */
export interface PolicyModelClientOptions {
  /** Model name reported in responses. */
  model?: string;
  /** The word tokenizer the policy was built with (renders prompts, decodes completions). */
  tokenizer: WordTokenizer;
  /** The policy's shape; must match the ONNX graph. */
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
  /** Which onnxruntime runs the graph (default `auto`: onnxruntime-node when installed, else onnxruntime-web). */
  runtime?: OnnxRuntimeChoice;
  /**
   * Concurrent requests with the same tokens share one row of a forward pass (default true: the
   * same logits, computed once). False runs one row per request, e.g. to measure the full cost.
   */
  shareRows?: boolean;
}

/** The not-yet-made completion arrays of `complete` (compared by identity, never written). */
const EMPTY: number[] = [];

/** Entries of the per-text token cache before it is cleared (texts of one game or prompt style are few). */
const TEXT_CACHE_LIMIT = 4096;

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
  private readonly runtimeChoice: OnnxRuntimeChoice;
  /**
   * Token ids of message texts rendered before, per role, by text: programs re-send the whole
   * conversation on every call, and games and user simulators send the same few messages as new
   * objects over and over (a seat's system prompt, each turn's message). Keyed by the text itself
   * (its hash is cached on the string), with no per-object map to keep. Cleared when they hold
   * {@link TEXT_CACHE_LIMIT} entries.
   */
  private readonly renderedTexts = new Map<Message['role'], Map<string, number[]>>();
  private renderedCount = 0;
  /** Response ids: a random prefix per client and a counter (a UUID per call cost more than its sampling). */
  private readonly idPrefix = `policy-${randomUUID()}-`;
  private responses = 0;
  /** What the chat template appends after the messages for a generation prompt. */
  private readonly generationSuffix: number[];
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
    this.runtimeChoice = session.runtime;
    this.rng = new Rng(options.seed ?? 0);
    this.generationSuffix = this.tokenizer.renderChat({ messages: [] });
    this.batcher = new MicroBatcher({
      policy: () => this.session,
      maxBatch: options.maxBatch ?? 256,
      maxWaitMs: options.maxWaitMs ?? 0,
      vocabSize: options.config.vocabSize,
      ...(options.shareRows === false ? { shareRows: false } : {}),
    });
  }

  static async create(options: PolicyModelClientOptions): Promise<PolicyModelClient> {
    const session = await OnnxPolicy.load({
      model: options.onnx,
      vocabSize: options.config.vocabSize,
      threads: options.threads ?? 1,
      ...(options.runtime ? { runtime: options.runtime } : {}),
    });
    return new PolicyModelClient(options, session);
  }

  /** The onnxruntime that runs the policy (`onnxruntime-node` or `onnxruntime-web`). */
  get runtime(): 'onnxruntime-node' | 'onnxruntime-web' {
    return this.session.runtime;
  }

  get stats() {
    return this.batcher.stats;
  }

  /** Swaps in new weights (an ONNX graph); requests in flight continue. */
  async updateWeights(options: { onnx: Uint8Array; version: number }): Promise<void> {
    // New weights stay on the runtime the client started on (the same arithmetic for a whole run).
    const next = await OnnxPolicy.load({
      model: options.onnx,
      vocabSize: this.config.vocabSize,
      threads: this.threads,
      runtime: this.runtimeChoice,
    });
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

  /**
   * `tokenizer.renderChat(messages)`, from per-message renderings: the chat template renders each
   * message on its own (`<role> words`), and programs re-send the whole conversation on every
   * call, so a message object seen before (with the same role and text) is not tokenized again.
   */
  private renderPrompt(messages: readonly Message[]): number[] {
    const parts: number[][] = [];
    let length = this.generationSuffix.length;
    for (const message of messages) {
      const tokens = this.renderMessage(message);
      parts.push(tokens);
      length += tokens.length;
    }
    const out = new Array<number>(length);
    let at = 0;
    for (const tokens of parts) for (let i = 0; i < tokens.length; i++) out[at++] = tokens[i] as number;
    for (const token of this.generationSuffix) out[at++] = token;
    return out;
  }

  /** One message's tokens; a text message's from the cache (the template renders it from its role and text alone). */
  private renderMessage(message: Message): number[] {
    const content = message.content;
    // Multimodal content is an array that could change in place: only text is remembered.
    if (typeof content !== 'string') return this.tokenizer.renderChat({ messages: [message], generation: false });
    let texts = this.renderedTexts.get(message.role);
    let tokens = texts?.get(content);
    if (tokens !== undefined) return tokens;
    tokens = this.tokenizer.renderChat({ messages: [message], generation: false });
    if (this.renderedCount >= TEXT_CACHE_LIMIT) {
      this.renderedTexts.clear();
      this.renderedCount = 0;
      texts = undefined;
    }
    if (texts === undefined) {
      texts = new Map();
      this.renderedTexts.set(message.role, texts);
    }
    texts.set(content, tokens);
    this.renderedCount++;
    return tokens;
  }

  complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    // Not `async`: a completion is one object that the micro-batcher settles step by step (no
    // async frame and no promise of the batcher's per step); a refusal still arrives as a rejection.
    let completion: Completion;
    try {
      completion = this.start(request, options.signal);
    } catch (error) {
      return Promise.reject(error);
    }
    if (completion.done) return Promise.resolve(completion.response());
    const promise = new Promise<ModelResponse>(bindCompletion);
    completion.resolve = boundResolve as (response: ModelResponse) => void;
    completion.reject = boundReject as (error: unknown) => void;
    this.batcher.submit(completion);
    return promise;
  }

  /** A completion of `request`, its prompt rendered and checked against the context length. */
  private start(request: ModelRequest, signal: AbortSignal | undefined): Completion {
    // The weights serving this call: the orchestrator swaps weights only between rollouts, so a
    // call never straddles an update there; elsewhere a call records the version it started on.
    const policyVersion = this.version;
    const prompt = this.renderPrompt(request.messages);
    const limit = this.config.contextLength;
    if (prompt.length >= limit) {
      throw new ProviderError(`prompt of ${prompt.length} tokens exceeds the maximum context length of ${limit} tokens`, {
        statusCode: 400,
      });
    }
    const maxTokens = Math.min(request.sampling.maxTokens ?? this.maxTokens, limit - prompt.length);
    signal?.throwIfAborted();
    return new Completion(this, request, signal, prompt, maxTokens, policyVersion);
  }

  /** @internal The next step of `completion` (its tokens so far) joins a forward pass. */
  submitStep(completion: Completion): void {
    this.batcher.submit(completion);
  }

  /** @internal The response of a finished completion. */
  responseOf(c: Completion, completion: number[], logprobs: number[]): ModelResponse {
    return {
      id: `${this.idPrefix}${(++this.responses).toString(36)}`,
      model: c.request.model || this.model,
      message: { role: 'assistant', content: this.tokenizer.decode(completion) },
      finishReason: c.finishReason,
      usage: { promptTokens: c.prompt.length, completionTokens: completion.length },
      promptTokenIds: c.prompt,
      completionTokenIds: completion,
      completionLogprobs: logprobs,
      policyVersion: c.policyVersion,
    };
  }
}

/**
 * One `complete` call in flight: the micro-batcher calls `settle` with each step's logits (in the
 * order requests joined the pass, so the sampling stream is consumed in that order); it samples a
 * token (temperature from the request, default 1) and either finishes — `<eos>` or `maxTokens` —
 * or joins the next pass with the token appended.
 */
class Completion implements BatchRequest {
  /** The next step's input: the prompt itself, copied only when a second step follows. */
  tokens: readonly number[];
  finishReason: ModelResponse['finishReason'] = 'length';
  /** Made at their first token (a one-token reply, the common case, gets arrays of one element). */
  private completion: number[] = EMPTY;
  private logprobs: number[] = EMPTY;
  private readonly temperature: number;
  resolve: (response: ModelResponse) => void = unset;
  reject: (error: unknown) => void = unset;

  constructor(
    private readonly client: PolicyModelClient,
    readonly request: ModelRequest,
    private readonly signal: AbortSignal | undefined,
    readonly prompt: number[],
    private readonly maxTokens: number,
    readonly policyVersion: number,
  ) {
    this.tokens = prompt;
    this.temperature = request.sampling.temperature ?? 1;
  }

  /** True when no token is to be sampled (maxTokens 0). */
  get done(): boolean {
    return this.completion.length >= this.maxTokens;
  }

  settle(logits: Float32Array): void {
    const { token, logprob } = sampleToken({ logits, temperature: this.temperature, rng: this.client.rng });
    if (this.completion === EMPTY) {
      this.completion = [token];
      this.logprobs = [logprob];
    } else {
      this.completion.push(token);
      this.logprobs.push(logprob);
    }
    if (token === this.client.tokenizer.eosId) this.finishReason = 'stop';
    else if (this.completion.length < this.maxTokens) {
      this.signal?.throwIfAborted();
      const tokens = this.tokens === this.prompt ? [...this.prompt] : (this.tokens as number[]);
      tokens.push(token);
      this.tokens = tokens;
      this.client.submitStep(this);
      return;
    }
    this.resolve(this.response());
  }

  fail(error: unknown): void {
    this.reject(error);
  }

  /** The response: text, prompt and completion token ids, per-token logprobs and the policy version. */
  response(): ModelResponse {
    // A reply of no tokens (maxTokens 0) still gets arrays of its own.
    if (this.completion === EMPTY) return this.client.responseOf(this, [], []);
    return this.client.responseOf(this, this.completion, this.logprobs);
  }
}

function unset(): void {
  // bare-error: unreachable unless this module's own bookkeeping is wrong
  throw new Error('policy model client: a completion settled before its promise was made');
}

/** The resolving functions `bindCompletion` took from the promise just made (read right after `new Promise`). */
let boundResolve: unknown;
let boundReject: unknown;
/** The executor of every completion's promise: one function, not a closure per call. */
function bindCompletion(resolve: unknown, reject: unknown): void {
  boundResolve = resolve;
  boundReject = reject;
}
