import { z } from 'zod';
import type { ContentPart, Message, ToolCall, ToolDefinition } from '../../model/messages.ts';
import type { FinishReason, ModelRequest, ModelResponse, Sampling, ToolChoice, Usage } from '../../model/model-client.ts';
import {
  inputTokensWithCache,
  mapEffort,
  openaiErrorType,
  type ParsedWireRequest,
  parseWire,
  splitDeltas,
  sseFrame,
  type WireDialect,
  type WireErrorInput,
  WireRequestError,
} from './dialect.ts';

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
});
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

function toolCallsOf(calls: z.infer<typeof ChatToolCallSchema>[] | null | undefined): ToolCall[] | undefined {
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

function chatTools(tools: ChatRequest['tools']): ToolDefinition[] | undefined {
  if (!tools?.length) return undefined;
  const out: ToolDefinition[] = [];
  for (const tool of tools) {
    if (tool.type !== 'function' || !tool.function) continue;
    const definition: ToolDefinition = {
      name: tool.function.name,
      parameters: tool.function.parameters ?? { type: 'object', properties: {} },
    };
    if (tool.function.description) definition.description = tool.function.description;
    out.push(definition);
  }
  return out.length ? out : undefined;
}

function chatToolChoice(choice: ChatRequest['tool_choice']): ToolChoice | undefined {
  if (choice == null) return undefined;
  if (typeof choice === 'string') return choice;
  return { name: choice.function.name };
}

function chatSampling(body: ChatRequest): Sampling {
  const sampling: Sampling = {};
  if (body.temperature != null) sampling.temperature = body.temperature;
  if (body.top_p != null) sampling.topP = body.top_p;
  if (body.top_k != null) sampling.topK = body.top_k;
  if (body.min_p != null) sampling.minP = body.min_p;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens != null) sampling.maxTokens = maxTokens;
  if (body.stop != null) sampling.stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (body.seed != null) sampling.seed = body.seed;
  const effort = mapEffort(body.reasoning_effort);
  if (effort) sampling.reasoningEffort = effort;
  return sampling;
}

// ---- neutral -> wire reply --------------------------------------------------------------------

function chatUsage(usage: Usage): Record<string, unknown> {
  const prompt = inputTokensWithCache(usage);
  const out: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: usage.completionTokens,
    total_tokens: prompt + usage.completionTokens,
  };
  if (usage.cachedInputTokens != null) out.prompt_tokens_details = { cached_tokens: usage.cachedInputTokens };
  if (usage.reasoningTokens != null) out.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  if (usage.cost != null) out.cost = usage.cost;
  return out;
}

function wireToolCalls(calls: ToolCall[]): unknown[] {
  return calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
}

/** Per-token logprobs in the chat wire shape (tokens named `token_id:<id>` like vLLM does). */
function wireLogprobs(response: ModelResponse): unknown {
  const logprobs = response.completionLogprobs ?? [];
  const ids = response.completionTokenIds ?? [];
  return {
    content: logprobs.map((logprob, i) => ({
      token: ids[i] !== undefined ? `token_id:${ids[i]}` : '',
      logprob,
      bytes: null,
      top_logprobs: [],
    })),
  };
}

const created = () => Math.floor(Date.now() / 1000);

function renderChatResponse(response: ModelResponse, parsed: ParsedWireRequest): unknown {
  const message: Record<string, unknown> = { role: 'assistant', content: response.message.content };
  if (response.message.toolCalls?.length) message.tool_calls = wireToolCalls(response.message.toolCalls);
  if (response.message.reasoning) message.reasoning_content = response.message.reasoning;
  const choice: Record<string, unknown> = {
    index: 0,
    message,
    finish_reason: response.finishReason,
    logprobs: parsed.logprobs && response.completionLogprobs ? wireLogprobs(response) : null,
  };
  const body: Record<string, unknown> = {
    id: response.id,
    object: 'chat.completion',
    created: created(),
    model: response.model,
    choices: [choice],
    usage: chatUsage(response.usage),
  };
  if (parsed.returnTokenIds) {
    if (response.completionTokenIds) choice.token_ids = response.completionTokenIds;
    if (response.promptTokenIds) body.prompt_token_ids = response.promptTokenIds;
  }
  return body;
}

function renderChatStream(response: ModelResponse, parsed: ParsedWireRequest): string[] {
  const base = { id: response.id, object: 'chat.completion.chunk', created: created(), model: response.model };
  const frames: string[] = [];
  const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null = null, extra?: Record<string, unknown>) =>
    sseFrame(null, { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason, ...extra }] });
  frames.push(chunk({ role: 'assistant', content: '' }));
  for (const piece of splitDeltas(response.message.reasoning ?? '')) frames.push(chunk({ reasoning_content: piece }));
  for (const piece of splitDeltas(response.message.content ?? '')) frames.push(chunk({ content: piece }));
  (response.message.toolCalls ?? []).forEach((call, index) => {
    frames.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of splitDeltas(call.arguments, 64)) {
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  const finalExtra: Record<string, unknown> = {};
  if (parsed.logprobs && response.completionLogprobs) finalExtra.logprobs = wireLogprobs(response);
  if (parsed.returnTokenIds && response.completionTokenIds) finalExtra.token_ids = response.completionTokenIds;
  frames.push(chunk({}, response.finishReason, finalExtra));
  if (parsed.includeUsage) frames.push(sseFrame(null, { ...base, choices: [], usage: chatUsage(response.usage) }));
  frames.push('data: [DONE]\n\n');
  return frames;
}

function openaiErrorBody(error: WireErrorInput): unknown {
  return {
    error: {
      message: error.message,
      type: error.type ?? openaiErrorType(error.status),
      param: error.param ?? null,
      code: error.status,
    },
  };
}

/** The OpenAI error body shared by the chat and responses dialects. */
export { openaiErrorBody };

/** OpenAI chat completions (`POST /v1/chat/completions`), with vLLM's token-id extensions. */
export const chatDialect: WireDialect = {
  name: 'chat',
  parseRequest(body: unknown): ParsedWireRequest {
    const wire = parseWire(ChatRequestSchema, body, 'chat completions request');
    if (wire.n != null && wire.n !== 1) throw new WireRequestError('n: only n=1 is supported', { param: 'n' });
    const request: ModelRequest = {
      model: wire.model,
      messages: chatMessagesToNeutral(wire.messages),
      sampling: chatSampling(wire),
    };
    const tools = chatTools(wire.tools);
    if (tools) request.tools = tools;
    const toolChoice = chatToolChoice(wire.tool_choice);
    if (toolChoice) request.toolChoice = toolChoice;
    return {
      request,
      stream: wire.stream === true,
      includeUsage: wire.stream_options?.include_usage === true,
      logprobs: wire.logprobs === true,
      returnTokenIds: wire.return_token_ids === true,
    };
  },
  renderResponse: renderChatResponse,
  renderStream: renderChatStream,
  errorBody: openaiErrorBody,
  streamError: (error) => sseFrame(null, openaiErrorBody(error)),
  heartbeat: () => ': keep-alive\n\n',
};

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
  const entries = choice.logprobs?.content;
  let completionIds = choice.token_ids ?? undefined;
  if (!completionIds && entries?.length) {
    const ids = entries.map((entry) => tokenIdOf(entry.token));
    if (ids.every((id) => id !== undefined)) completionIds = ids as number[];
  }
  if (completionIds) response.completionTokenIds = completionIds;
  if (entries?.length) response.completionLogprobs = entries.map((entry) => entry.logprob);
  return response;
}
