import { z } from 'zod';
import type { AssistantMessage, Message, ToolDefinition } from './messages.ts';

/** Sampling parameters imposed on every call of a run. Unknown keys go to `extra` verbatim. */
export const SamplingSchema = z
  .object({
    temperature: z.number().min(0).optional(),
    topP: z.number().gt(0).max(1).optional(),
    /** Sample from the k most likely tokens (vLLM / SGLang `top_k`). */
    topK: z.number().int().optional(),
    /** Drop tokens below this fraction of the top token's probability (vLLM `min_p`). */
    minP: z.number().min(0).max(1).optional(),
    maxTokens: z.number().int().positive().optional(),
    stop: z.array(z.string()).optional(),
    seed: z.number().int().optional(),
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
    /** Extra body fields passed through to the server (e.g. vLLM's `top_k`). */
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type Sampling = z.infer<typeof SamplingSchema>;

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** One model call in the dialect-neutral form that every dialect is translated to. */
export interface ModelRequest {
  model: string;
  messages: Message[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  sampling: Sampling;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** Token usage of one call. `promptTokens` excludes cached input tokens. */
export const UsageSchema = z.object({
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  cachedInputTokens: z.number().int().nonnegative().optional(),
  reasoningTokens: z.number().int().nonnegative().optional(),
  cost: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** The answer to a `ModelRequest`. Token ids and logprobs are present when the server returns them. */
export interface ModelResponse {
  id: string;
  model: string;
  message: AssistantMessage;
  finishReason: FinishReason;
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

export interface ModelCallOptions {
  signal?: AbortSignal;
}

/**
 * Anything that can answer a chat request: an OpenAI-compatible server, an in-process policy,
 * a scripted test model. Clients are injected; they never read `process.env`.
 */
export interface ModelClient {
  /** The model name the client serves by default. */
  readonly model: string;
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse>;
}

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

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0 });
