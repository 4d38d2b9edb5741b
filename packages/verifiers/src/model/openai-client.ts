import OpenAI from 'openai';
import { z } from 'zod';
import { MalformedReplyError } from '../errors/malformed-reply-error.ts';
import { ConfigError, LimitError, ProviderError } from '../errors/troupe-error.ts';
import { restoreLiftedLogprobs } from '../wire/chat-reply-parse.ts';
import { ChatCompletionSchema, chatCompletionToResponse, chatRequestBody } from '../wire/openai-chat.ts';
import { isChatCompletion } from '../wire/openai-chat-quick.ts';
import { createBufferedFetch } from './buffered-fetch.ts';
import { postJson } from './json-post.ts';
import {
  type ModelCallOptions,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  SamplingSchema,
} from './model-client.ts';
import { isRetryableStatus, type RetryDecision, RetryOptionsSchema, retryAfterMs, withRetry } from './retry.ts';

/** Options of `OpenAICompatibleClient`; everything is injected (never read from the environment). */
export const OpenAICompatibleClientOptionsSchema = z
  .object({
    /** Base URL including `/v1`, e.g. `http://127.0.0.1:8000/v1`. */
    baseUrl: z.string().url(),
    apiKey: z.string().min(1),
    /** Model used when a request names none. */
    model: z.string().min(1),
    /** Extra headers on every request. */
    headers: z.record(z.string(), z.string()).optional(),
    /** Sampling defaults; a request's own sampling wins. */
    sampling: SamplingSchema.optional(),
    retry: RetryOptionsSchema.optional(),
    /** Timeout of one attempt in milliseconds (default 10 minutes). */
    timeoutMs: z.number().int().positive().optional(),
    /** Ask vLLM for prompt / completion token ids (`return_token_ids`; default true). */
    returnTokenIds: z.boolean().default(true),
    /** Ask for per-token logprobs (default true). */
    logprobs: z.boolean().default(true),
    /** The fetch the SDK uses (default: a buffered keep-alive `node:http` fetch shared by all clients). */
    fetch: z.custom<typeof fetch>((value) => typeof value === 'function', 'expected a fetch function').optional(),
  })
  .strict();
/**
 * What `new OpenAICompatibleClient(options)` takes (every field with a default optional; times in
 * milliseconds); see {@link OpenAICompatibleClientOptionsSchema}, which throws naming a bad field.
 */
export type OpenAICompatibleClientOptions = z.input<typeof OpenAICompatibleClientOptionsSchema>;

/**
 * A `ModelClient` for any OpenAI-compatible chat completions server (vLLM, SGLang, OpenAI,
 * OpenRouter …) on the `openai` SDK. Captures vLLM's token ids and logprobs; retries 408 / 409 /
 * 429 / 5xx and connection failures itself (the SDK's retries are off) and fails with a
 * `ProviderError` carrying the status.
 */
export class OpenAICompatibleClient implements ModelClient {
  readonly model: string;
  private readonly options: z.output<typeof OpenAICompatibleClientOptionsSchema>;
  private readonly retry: z.output<typeof RetryOptionsSchema>;
  private readonly sdk: OpenAI;
  /** Where the lean transport posts (null when a `fetch` was injected: the SDK's path then). */
  private readonly completionsUrl: URL | null;
  private readonly postHeaders: Record<string, string>;

  constructor(options: OpenAICompatibleClientOptions) {
    const parsed = OpenAICompatibleClientOptionsSchema.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`OpenAICompatibleClient: ${issue?.path.join('.') || 'options'}: ${issue?.message}`);
    }
    this.options = parsed.data;
    this.model = parsed.data.model;
    this.retry = RetryOptionsSchema.parse(parsed.data.retry ?? {});
    this.sdk = new OpenAI({
      baseURL: parsed.data.baseUrl,
      apiKey: parsed.data.apiKey,
      organization: null,
      project: null,
      webhookSecret: null,
      maxRetries: 0,
      timeout: parsed.data.timeoutMs ?? 600_000,
      fetch: parsed.data.fetch ?? defaultFetch(),
      ...(parsed.data.headers ? { defaultHeaders: parsed.data.headers } : {}),
    });
    const base = parsed.data.baseUrl.replace(/\/+$/, '');
    this.completionsUrl = parsed.data.fetch || base.includes('?') ? null : new URL(`${base}/chat/completions`);
    this.postHeaders = {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Bearer ${parsed.data.apiKey}`,
      ...parsed.data.headers,
    };
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const model = request.model || this.model;
    const body = chatRequestBody(
      { ...request, model, sampling: { ...this.options.sampling, ...request.sampling } },
      { logprobs: this.options.logprobs, returnTokenIds: this.options.returnTokenIds },
    );
    // Serialized once, before any attempt: a body that cannot be (a tool schema nested past the
    // stack) is the caller's request, refused locally — never retried, never a provider error.
    const text = this.completionsUrl ? serializeRequest(body) : null;
    let attempts = 0;
    try {
      return await withRetry(
        async () => {
          attempts++;
          const reply: unknown = this.completionsUrl
            ? await postJson(this.completionsUrl, text as string, {
                headers: this.postHeaders,
                signal: options.signal,
                timeoutMs: this.options.timeoutMs ?? 600_000,
              })
            : await this.sdk.chat.completions.create(
                body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
                options.signal ? { signal: options.signal } : {},
              );
          if (isChatCompletion(reply)) return chatCompletionToResponse(reply, model);
          restoreLiftedLogprobs(reply);
          const checked = ChatCompletionSchema.safeParse(reply);
          if (!checked.success) {
            const issue = checked.error.issues[0];
            throw new MalformedReplyError(`reply is not a chat completion: ${issue?.path.join('.')}: ${issue?.message}`);
          }
          return chatCompletionToResponse(checked.data, model);
        },
        { policy: this.retry, classify, signal: options.signal },
      );
    } catch (error) {
      if (options.signal?.aborted) throw error;
      if (error instanceof RangeError) throw unserializable(error);
      throw toProviderError(error, attempts, this.options.baseUrl);
    }
  }

  /**
   * One cheap call before a run: `GET <baseUrl>/models`. Resolves when the endpoint answers 2xx
   * with JSON; otherwise throws a `ProviderError` naming the URL and the status (or the
   * connection failure), so a run against a wrong endpoint fails before it starts.
   */
  async preflight(options: { timeoutMs?: number } = {}): Promise<void> {
    const url = `${this.options.baseUrl.replace(/\/+$/, '')}/models`;
    const fetcher = this.options.fetch ?? defaultFetch();
    let response: Response;
    try {
      response = await fetcher(url, {
        headers: { authorization: `Bearer ${this.options.apiKey}`, ...this.options.headers },
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new ProviderError(
        `model endpoint ${url} is unreachable: ${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`,
        { cause: error, statusCode: 502 },
      );
    }
    const text = await response.text();
    if (!response.ok) {
      throw new ProviderError(`model endpoint ${url} answered ${response.status}: ${text.slice(0, 200)}`, {
        statusCode: response.status,
      });
    }
    try {
      JSON.parse(text);
    } catch {
      throw new ProviderError(
        `model endpoint ${url} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
        {
          statusCode: 502,
        },
      );
    }
  }
}

let sharedFetch: typeof fetch | undefined;
function defaultFetch(): typeof fetch {
  sharedFetch ??= createBufferedFetch();
  return sharedFetch;
}

/** `JSON.stringify(body)`, or a local `LimitError` (400) when it cannot be serialized. */
function serializeRequest(body: unknown): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw unserializable(error);
  }
}

/** The local error of a request that cannot be serialized (nesting past the stack, a cycle). */
function unserializable(error: unknown): LimitError {
  return new LimitError(
    `the request cannot be serialized (${(error as Error)?.message ?? String(error)}): a message or tool schema nests too deeply`,
    { cause: error, statusCode: 400 },
  );
}

function classify(error: unknown): RetryDecision {
  if (error instanceof OpenAI.APIUserAbortError) return { retry: false };
  // A stack overflow (or another RangeError) is this process's own failure: retrying repeats it.
  if (error instanceof RangeError) return { retry: false };
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    if (!isRetryableStatus(error.status)) return { retry: false };
    const after = retryAfterMs(error.headers ?? null);
    return after === undefined ? { retry: true } : { retry: true, retryAfterMs: after };
  }
  // Connection failures, timeouts, truncated or malformed bodies.
  return { retry: true };
}

function toProviderError(error: unknown, attempts: number, endpoint: string): ProviderError {
  const suffix = `${attempts > 1 ? ` (after ${attempts} attempts)` : ''} [endpoint ${endpoint}]`;
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    return new ProviderError(`model server answered ${error.status}: ${error.message}${suffix}`, {
      cause: error,
      statusCode: error.status,
    });
  }
  const message = (error as Error)?.message ?? String(error);
  const cause = (error as { cause?: { message?: string } })?.cause?.message;
  return new ProviderError(`model call failed: ${message}${cause ? ` (${cause})` : ''}${suffix}`, {
    cause: error,
    statusCode: 502,
  });
}
