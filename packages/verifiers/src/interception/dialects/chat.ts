import type { ToolDefinition } from '../../model/messages.ts';
import type { FinishReason, ModelRequest, ModelResponse, Sampling, ToolChoice, Usage } from '../../model/model-client.ts';
import { type ChatRequest, ChatRequestSchema, chatMessagesToNeutral, wireToolCalls } from '../../wire/openai-chat.ts';
import { isChatRequest } from '../../wire/openai-chat-quick.ts';
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

// The wire schemas and the translations the model client shares live in `wire/openai-chat.ts`;
// re-exported here for the names this module has always exported.
export {
  type ChatCompletion,
  ChatCompletionSchema,
  ChatMessageSchema,
  type ChatRequest,
  type ChatRequestBodyOptions,
  ChatRequestSchema,
  chatCompletionToResponse,
  chatMessagesToNeutral,
  chatRequestBody,
} from '../../wire/openai-chat.ts';

// ---- wire request -> neutral (server side) ------------------------------------------------------

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
    // A policy server (troupe's `serve-inference`) names the weights that served the call.
    if (response.policyVersion !== undefined) body.policy_version = response.policyVersion;
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

/**
 * The JSON body of an OpenAI-style error reply: `{ error: { message, type, param, code } }`, `type`
 * derived from the HTTP status when not given.
 */
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
    // The quick check walks the body once; the schema (which names a bad field) only when it declines.
    const wire = isChatRequest(body) ? body : parseWire(ChatRequestSchema, body, 'chat completions request');
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
