import { z } from 'zod';
import { WireRequestError } from '../errors/wire-request-error.ts';
import type { ContentPart, Message, ToolCall } from '../model/messages.ts';
import type { FinishReason, ModelRequest, ModelResponse, Usage } from '../model/model-client.ts';
import { liftedLogprobs } from './chat-reply-parse.ts';

/**
 * The OpenAI chat completions wire format (with vLLM's token-id extensions), below both sides
 * that speak it: the model client (`model/openai-client.ts`) sends requests and reads replies,
 * the interception server's chat dialect (`interception/dialects/chat.ts`) reads requests and
 * renders replies. Schemas and the translations both sides share live here, once.
 */

// ---- wire schemas (OpenAI chat completions, with the vLLM extensions) ------------------------

const ChatContentPartSchema = z.union([
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({
    type: z.literal('image_url'),
    image_url: z.union([z.string(), z.looseObject({ url: z.string() })]),
  }),
  z.looseObject({ type: z.literal('refusal'), refusal: z.string() }),
  z.looseObject({ type: z.string() }),
]);
const ChatContentSchema = z.union([z.string(), z.array(ChatContentPartSchema)]);

const ChatToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.string().optional(),
  function: z.looseObject({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

/** A message of an OpenAI chat request (system, developer, user, assistant, tool). */
export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: ChatContentSchema }),
  z.looseObject({ role: z.literal('developer'), content: ChatContentSchema }),
  z.looseObject({ role: z.literal('user'), content: ChatContentSchema }),
  z.looseObject({
    role: z.literal('assistant'),
    content: ChatContentSchema.nullish(),
    tool_calls: z.array(ChatToolCallSchema).nullish(),
    reasoning_content: z.string().nullish(),
    reasoning: z.string().nullish(),
  }),
  z.looseObject({ role: z.literal('tool'), tool_call_id: z.string(), content: ChatContentSchema }),
]);

const ChatToolSchema = z.looseObject({
  type: z.string(),
  function: z
    .looseObject({
      name: z.string(),
      description: z.string().nullish(),
      parameters: z.record(z.string(), z.unknown()).nullish(),
    })
    .optional(),
});

/** An OpenAI chat completions request body. Unknown fields are accepted and ignored. */
export const ChatRequestSchema = z.looseObject({
  model: z.string(),
  messages: z.array(ChatMessageSchema),
  tools: z.array(ChatToolSchema).nullish(),
  tool_choice: z
    .union([
      z.enum(['auto', 'none', 'required']),
      z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string() }) }),
    ])
    .nullish(),
  temperature: z.number().min(0).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  seed: z.number().int().nullish(),
  reasoning_effort: z.string().nullish(),
  n: z.number().int().positive().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  logprobs: z.boolean().nullish(),
  return_token_ids: z.boolean().nullish(),
});
/**
 * An OpenAI chat completions request body (snake_case wire fields, vLLM's extras such as
 * `return_token_ids`; unknown fields kept); see {@link ChatRequestSchema}.
 */
export type ChatRequest = z.infer<typeof ChatRequestSchema>;

const ChatUsageSchema = z.looseObject({
  prompt_tokens: z.number().int().nonnegative().nullish(),
  completion_tokens: z.number().int().nonnegative().nullish(),
  prompt_tokens_details: z.looseObject({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  completion_tokens_details: z.looseObject({ reasoning_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  /** Cost of the call in USD, when the provider reports it (OpenRouter, Prime inference). */
  cost: z.number().nonnegative().nullish(),
});

/** An OpenAI chat completion (non-streaming reply), with vLLM's token-id fields. */
export const ChatCompletionSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z.array(ChatToolCallSchema).nullish(),
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
        }),
        finish_reason: z.string().nullish(),
        logprobs: z
          .looseObject({
            content: z.array(z.looseObject({ token: z.string().nullish(), logprob: z.number() })).nullish(),
          })
          .nullish(),
        token_ids: z.array(z.number().int()).nullish(),
        prompt_token_ids: z.array(z.number().int()).nullish(),
      }),
    )
    .min(1),
  usage: ChatUsageSchema.nullish(),
  prompt_token_ids: z.array(z.number().int()).nullish(),
  /** troupe's policy server (`serve-inference`): the version of the weights that served the call. */
  policy_version: z.number().int().nonnegative().nullish(),
});
/**
 * An OpenAI chat completions reply body (with vLLM's `prompt_token_ids` / token ids and troupe's
 * `policy_version` when present); see {@link ChatCompletionSchema}.
 */
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

// ---- wire request -> neutral ------------------------------------------------------------------

type ChatContent = z.infer<typeof ChatContentSchema>;

function textOf(content: ChatContent | null | undefined): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    else if (part.type === 'refusal' && typeof part.refusal === 'string') texts.push(part.refusal);
  }
  return texts.join('\n\n');
}

function userContent(content: ChatContent): string | ContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.type === 'image_url') {
      const image = part.image_url as string | { url: string };
      parts.push({ type: 'image', url: typeof image === 'string' ? image : image.url });
    }
  }
  return parts;
}

/** Chat wire tool calls as neutral ones (object arguments become their JSON text). */
export function toolCallsOf(calls: z.infer<typeof ChatToolCallSchema>[] | null | undefined): ToolCall[] | undefined {
  if (!calls?.length) return undefined;
  return calls.map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments:
      typeof call.function.arguments === 'string'
        ? call.function.arguments
        : call.function.arguments == null
          ? ''
          : JSON.stringify(call.function.arguments),
  }));
}

/** Translates chat wire messages into neutral messages (developer → system). */
export function chatMessagesToNeutral(messages: z.infer<typeof ChatMessageSchema>[]): Message[] {
  const out: Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        out.push({ role: 'system', content: textOf(message.content) });
        break;
      case 'user':
        out.push({ role: 'user', content: userContent(message.content) });
        break;
      case 'assistant': {
        const assistant: Message = {
          role: 'assistant',
          content: message.content == null ? null : textOf(message.content),
        };
        const toolCalls = toolCallsOf(message.tool_calls);
        if (toolCalls) assistant.toolCalls = toolCalls;
        const reasoning = message.reasoning_content ?? message.reasoning;
        if (reasoning) assistant.reasoning = reasoning;
        out.push(assistant);
        break;
      }
      case 'tool':
        out.push({ role: 'tool', toolCallId: message.tool_call_id, content: textOf(message.content) });
        break;
    }
  }
  return out;
}

/** Neutral tool calls in the chat wire shape (`{ id, type: "function", function: { name, arguments } }`). */
export function wireToolCalls(calls: ToolCall[]): unknown[] {
  return calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
}

// ---- client side: neutral -> wire request, wire reply -> neutral ----------------------------------

/** Options of `chatRequestBody`. */
export interface ChatRequestBodyOptions {
  /** Ask for per-token logprobs (`logprobs: true`). */
  logprobs?: boolean;
  /** Ask vLLM for prompt and completion token ids (`return_token_ids: true`). */
  returnTokenIds?: boolean;
}

function wireContent(content: string | ContentPart[]): unknown {
  if (typeof content === 'string') return content;
  return content.map((part) =>
    part.type === 'text' ? { type: 'text', text: part.text } : { type: 'image_url', image_url: { url: part.url } },
  );
}

/** Translates a neutral request into an OpenAI chat completions body (the client side). */
export function chatRequestBody(request: ModelRequest, options: ChatRequestBodyOptions = {}): Record<string, unknown> {
  const messages = request.messages.map((message): Record<string, unknown> => {
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content };
      case 'user':
        return { role: 'user', content: wireContent(message.content) };
      case 'assistant': {
        const out: Record<string, unknown> = { role: 'assistant', content: message.content };
        if (message.toolCalls?.length) out.tool_calls = wireToolCalls(message.toolCalls);
        if (message.reasoning) out.reasoning_content = message.reasoning;
        return out;
      }
      default:
        return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    }
  });
  const body: Record<string, unknown> = { model: request.model, messages };
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.parameters },
    }));
  }
  if (request.toolChoice) {
    body.tool_choice =
      typeof request.toolChoice === 'string'
        ? request.toolChoice
        : { type: 'function', function: { name: request.toolChoice.name } };
  }
  const s = request.sampling;
  if (s.temperature != null) body.temperature = s.temperature;
  if (s.topP != null) body.top_p = s.topP;
  if (s.topK != null) body.top_k = s.topK;
  if (s.minP != null) body.min_p = s.minP;
  if (s.maxTokens != null) body.max_tokens = s.maxTokens;
  if (s.stop?.length) body.stop = s.stop;
  if (s.seed != null) body.seed = s.seed;
  if (s.reasoningEffort) body.reasoning_effort = s.reasoningEffort;
  if (options.logprobs) body.logprobs = true;
  if (options.returnTokenIds) body.return_token_ids = true;
  if (s.extra) Object.assign(body, s.extra);
  return body;
}

function finishReasonOf(raw: string | null | undefined, hasToolCalls: boolean): FinishReason {
  if (raw === 'length') return 'length';
  if (raw === 'tool_calls' || raw === 'function_call' || hasToolCalls) return hasToolCalls ? 'tool_calls' : 'stop';
  return 'stop';
}

/** Parses a `token_id:<n>` token name (vLLM `return_tokens_as_token_ids`). */
function tokenIdOf(token: string | null | undefined): number | undefined {
  if (!token?.startsWith('token_id:')) return undefined;
  const id = Number(token.slice(9));
  return Number.isInteger(id) ? id : undefined;
}

/**
 * Translates an OpenAI chat completion (validated with `ChatCompletionSchema`) into a neutral
 * response, keeping vLLM's `prompt_token_ids`, `choices[0].token_ids` and the logprobs.
 */
export function chatCompletionToResponse(body: ChatCompletion, fallbackModel: string): ModelResponse {
  const choice = body.choices[0];
  if (!choice) throw new WireRequestError('choices: empty', { param: 'choices' });
  const toolCalls = toolCallsOf(choice.message.tool_calls);
  const message: ModelResponse['message'] = { role: 'assistant', content: choice.message.content ?? null };
  if (toolCalls) message.toolCalls = toolCalls;
  const reasoning = choice.message.reasoning_content ?? choice.message.reasoning;
  if (reasoning) message.reasoning = reasoning;
  const wireUsage = body.usage;
  const cached = wireUsage?.prompt_tokens_details?.cached_tokens ?? undefined;
  const usage: Usage = {
    promptTokens: Math.max(0, (wireUsage?.prompt_tokens ?? 0) - (cached ?? 0)),
    completionTokens: wireUsage?.completion_tokens ?? 0,
  };
  if (cached) usage.cachedInputTokens = cached;
  const reasoningTokens = wireUsage?.completion_tokens_details?.reasoning_tokens;
  if (reasoningTokens) usage.reasoningTokens = reasoningTokens;
  if (wireUsage?.cost != null) usage.cost = wireUsage.cost;
  const response: ModelResponse = {
    id: body.id ?? '',
    model: body.model ?? fallbackModel,
    message,
    finishReason: finishReasonOf(choice.finish_reason, Boolean(toolCalls)),
    usage,
  };
  const promptIds = body.prompt_token_ids ?? choice.prompt_token_ids;
  if (promptIds) response.promptTokenIds = promptIds;
  // Entries `parseChatReply` lifted out of the reply's text come as arrays, not objects.
  const lifted = liftedLogprobs(choice.logprobs);
  const entries = choice.logprobs?.content;
  let completionIds = choice.token_ids ?? undefined;
  if (!completionIds && (lifted ? lifted.logprobs.length : entries?.length)) {
    const ids = lifted ? lifted.tokens().map(tokenIdOf) : (entries ?? []).map((entry) => tokenIdOf(entry.token));
    if (ids.every((id) => id !== undefined)) completionIds = ids as number[];
  }
  if (completionIds) response.completionTokenIds = completionIds;
  if (lifted) {
    if (lifted.logprobs.length) response.completionLogprobs = lifted.logprobs;
  } else if (entries?.length) response.completionLogprobs = entries.map((entry) => entry.logprob);
  // troupe's policy server (`serve-inference`) names the weights that served the call.
  if (body.policy_version != null) response.policyVersion = body.policy_version;
  return response;
}
