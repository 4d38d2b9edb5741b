import { z } from 'zod';
import type { AssistantMessage, Message, ToolDefinition } from './messages.ts';

/** Sampling parameters imposed on every call of a run. Unknown keys go to `extra` verbatim. */
export const SamplingSchema = z
  .object({
    /** Softmax temperature, ≥ 0 (0 = greedy on servers that support it). */
    temperature: z.number().min(0).optional(),
    /** Nucleus sampling: sample from the smallest token set whose probability reaches this, in (0, 1]. */
    topP: z.number().gt(0).max(1).optional(),
    /** Sample from the k most likely tokens (vLLM / SGLang `top_k`). */
    topK: z.number().int().optional(),
    /** Drop tokens below this fraction of the top token's probability (vLLM `min_p`). */
    minP: z.number().min(0).max(1).optional(),
    /** Most completion tokens the model may sample in one call (OpenAI `max_tokens`). */
    maxTokens: z.number().int().positive().optional(),
    /** Strings that end the completion when sampled (not included in the reply). */
    stop: z.array(z.string()).optional(),
    /** Sampling seed, for servers that make sampling reproducible with one. */
    seed: z.number().int().optional(),
    /** How much a reasoning model thinks before it answers (OpenAI `reasoning_effort`). */
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
    /** Extra body fields passed through to the server (e.g. vLLM's `top_k`). */
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
/** Sampling parameters of a call, as {@link SamplingSchema} parses them (every field optional). */
export type Sampling = z.infer<typeof SamplingSchema>;

/**
 * Whether and which tool the model must call: `auto` (the model decides), `none` (no tool call),
 * `required` (at least one tool call) or `{ name }` (that tool).
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** One model call in the dialect-neutral form that every dialect is translated to. */
export interface ModelRequest {
  /** The model name sent to the server. */
  model: string;
  /** The conversation so far, oldest first. */
  messages: Message[];
  /** The tools offered to the model. */
  tools?: ToolDefinition[];
  /** Whether and which tool the model must call (server default when absent). */
  toolChoice?: ToolChoice;
  /** The sampling parameters of this call. */
  sampling: Sampling;
}

/**
 * Why the model stopped: `stop` (it finished, or sampled a stop string), `length` (it hit
 * `maxTokens` or the context length), `tool_calls` (it called tools and waits for their results).
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** Token usage of one call. `promptTokens` excludes cached input tokens. */
export const UsageSchema = z.object({
  /** Input tokens not served from the provider's prompt cache (tokens). */
  promptTokens: z.number().int().nonnegative(),
  /** Sampled tokens, reasoning tokens included (tokens). */
  completionTokens: z.number().int().nonnegative(),
  /** Input tokens served from the provider's prompt cache (tokens; not counted in `promptTokens`). */
  cachedInputTokens: z.number().int().nonnegative().optional(),
  /** The part of `completionTokens` spent on reasoning (tokens). */
  reasoningTokens: z.number().int().nonnegative().optional(),
  /** The cost in USD, when the provider reported it (otherwise a price table may compute it). */
  cost: z.number().nonnegative().optional(),
});
/** Token usage of one call (or a sum of calls, see {@link addUsage}); counts in tokens, `cost` in USD. */
export type Usage = z.infer<typeof UsageSchema>;

/** The answer to a `ModelRequest`. Token ids and logprobs are present when the server returns them. */
export interface ModelResponse {
  /** The server's id of the completion. */
  id: string;
  /** The model that answered, as the server names it. */
  model: string;
  /** The reply. */
  message: AssistantMessage;
  /** Why sampling stopped. */
  finishReason: FinishReason;
  /** Tokens used by this call. */
  usage: Usage;
  /** Exact prompt token ids as the server tokenized them (vLLM `prompt_token_ids`). */
  promptTokenIds?: number[];
  /** Sampled token ids (vLLM `choices[].token_ids`). */
  completionTokenIds?: number[];
  /** One logprob per sampled token. */
  completionLogprobs?: number[];
  /**
   * Version of the policy weights that served the call, when the server is a policy being
   * trained (troupe's embedded inference; its HTTP server sends it as `policy_version`).
   */
  policyVersion?: number;
}

/** Per-call options of {@link ModelClient.complete}. */
export interface ModelCallOptions {
  /** Aborts the call (the request is cancelled and the promise rejects). */
  signal?: AbortSignal;
}

/**
 * Anything that can answer a chat request: an OpenAI-compatible server, an in-process policy,
 * a scripted test model. Clients are injected; they never read `process.env`.
 */
export interface ModelClient {
  /** The model name the client serves by default. */
  readonly model: string;
  /**
   * Sends one request and resolves with the reply. Rejects when the call fails (after the
   * client's own retries, if any) or `options.signal` aborts it.
   */
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse>;
}

/**
 * The sum of two usages, field by field; an optional field is present in the sum only when it is
 * non-zero (so summing usages without `cost` never shows a cost of 0).
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
  const cached = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0);
  if (cached) sum.cachedInputTokens = cached;
  const reasoning = (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0);
  if (reasoning) sum.reasoningTokens = reasoning;
  const cost = (a.cost ?? 0) + (b.cost ?? 0);
  if (cost) sum.cost = cost;
  return sum;
}

/** A fresh zero usage (0 prompt and 0 completion tokens), the start of a sum with {@link addUsage}. */
export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0 });
