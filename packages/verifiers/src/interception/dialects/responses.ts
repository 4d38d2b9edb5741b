import { z } from 'zod';
import type { AssistantMessage, ContentPart, Message, ToolCall, ToolDefinition } from '../../model/messages.ts';
import type { ModelRequest, ModelResponse, Sampling, ToolChoice, Usage } from '../../model/model-client.ts';
import {
  isNullish,
  isObject,
  isTextOrTyped,
  isTypedArray,
  nullishBoolean,
  nullishPositiveInt,
  nullishString,
} from '../../wire/json-checks.ts';
import { openaiErrorBody } from './chat.ts';
import {
  inputTokensWithCache,
  mapEffort,
  type ParsedWireRequest,
  parseWire,
  splitDeltas,
  sseFrame,
  type WireDialect,
  WireRequestError,
  wireId,
} from './dialect.ts';

// ---- wire schemas (OpenAI Responses API) -------------------------------------------------------

const ContentItemSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);

const MessageItemSchema = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: ContentItemSchema,
});
const FunctionCallItemSchema = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string(),
  name: z.string(),
  /** Set when the function belongs to a `namespace` tool entry (codex: MCP servers, sub-agents). */
  namespace: z.string().nullish(),
  arguments: z.string(),
});
const CustomToolCallItemSchema = z.looseObject({
  type: z.literal('custom_tool_call'),
  call_id: z.string(),
  name: z.string(),
  input: z.string(),
});
const ToolOutputItemSchema = z.looseObject({
  type: z.enum(['function_call_output', 'custom_tool_call_output']),
  call_id: z.string(),
  output: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]),
});
const ReasoningItemSchema = z.looseObject({
  type: z.literal('reasoning'),
  summary: z.array(z.looseObject({ text: z.string().optional() })).nullish(),
  content: z.array(z.looseObject({ text: z.string().optional() })).nullish(),
});

const InputItemSchema = z.union([
  MessageItemSchema,
  FunctionCallItemSchema,
  CustomToolCallItemSchema,
  ToolOutputItemSchema,
  ReasoningItemSchema,
  z.looseObject({ type: z.string() }),
]);

/** An OpenAI Responses request body. Unknown fields and unknown input items are accepted. */
export const ResponsesRequestSchema = z.looseObject({
  model: z.string(),
  input: z.union([z.string(), z.array(InputItemSchema)]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string(), name: z.string().optional() })]).nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish() }).nullish(),
  stream: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
});
/**
 * An OpenAI Responses API request body as interception accepts it (snake_case wire fields; unknown
 * fields kept); see {@link ResponsesRequestSchema}.
 */
export type ResponsesRequest = z.infer<typeof ResponsesRequestSchema>;

const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/**
 * True only for a body {@link ResponsesRequestSchema} accepts, walked without copying it (a false
 * answer means: parse with the schema, which names the bad field). An input item with a string
 * `type` is accepted by the schema's catch-all item whatever its other fields; one without a
 * `type` must be a message.
 */
export function isResponsesRequest(body: unknown): body is ResponsesRequest {
  if (!isObject(body) || typeof body.model !== 'string') return false;
  const input = body.input;
  if (Array.isArray(input)) {
    for (const item of input) {
      if (!isObject(item)) return false;
      if (typeof item.type === 'string') continue;
      if (item.type !== undefined || !MESSAGE_ROLES.has(item.role as string) || !isTextOrTyped(item.content)) return false;
    }
  } else if (!isNullish(input) && typeof input !== 'string') return false;
  const { tool_choice: choice, reasoning } = body;
  return (
    nullishString(body.instructions) &&
    (isNullish(body.tools) || isTypedArray(body.tools)) &&
    (isNullish(choice) ||
      typeof choice === 'string' ||
      (isObject(choice) && typeof choice.type === 'string' && (choice.name === undefined || typeof choice.name === 'string'))) &&
    nullishPositiveInt(body.max_output_tokens) &&
    (isNullish(reasoning) || (isObject(reasoning) && nullishString(reasoning.effort))) &&
    nullishBoolean(body.stream) &&
    nullishString(body.previous_response_id)
  );
}

// ---- wire request -> neutral --------------------------------------------------------------------

/**
 * The neutral name of a function inside a `namespace` tool entry: `<namespace>__<name>`. Codex
 * sends each MCP server as `{type: "namespace", name: "mcp__<server>", tools: [...]}`, so a
 * server tool reads `mcp__<server>__<tool>` to the model — the name Claude Code gives it too.
 */
export function namespacedToolName(namespace: string, name: string): string {
  return `${namespace}__${name}`;
}

/** Where a neutral tool name came from in the wire request, so a reply can name it the same way. */
interface WireToolName {
  readonly namespace: string;
  readonly name: string;
}

/**
 * Per parsed request (keyed by its neutral `request`, which survives a copy of the parsed
 * object): the neutral names that stand for a namespaced function, read when the reply renders.
 */
const namespacedCalls = new WeakMap<ModelRequest, ReadonlyMap<string, WireToolName>>();

type Part = { type: string; [key: string]: unknown };

function partsText(content: string | Part[]): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part.text === 'string') texts.push(part.text);
    else if (typeof part.refusal === 'string') texts.push(part.refusal);
  }
  return texts.join('\n\n');
}

function userParts(content: string | Part[]): string | ContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.type === 'input_image' && typeof part.image_url === 'string')
      parts.push({ type: 'image', url: part.image_url });
  }
  return parts;
}

/** The neutral tool call of a `function_call` (its namespace folded into the name) or `custom_tool_call` item. */
function toolCallOf(item: Part): ToolCall {
  const namespace = item.type === 'function_call' && typeof item.namespace === 'string' ? item.namespace : '';
  return {
    id: item.call_id as string,
    name: namespace ? namespacedToolName(namespace, item.name as string) : (item.name as string),
    arguments: (item.type === 'function_call' ? item.arguments : item.input) as string,
  };
}

/** The non-empty texts of a `reasoning` item: its summary, then its content. */
function reasoningTexts(item: Part): string[] {
  return [...((item.summary as Part[] | null) ?? []), ...((item.content as Part[] | null) ?? [])]
    .map((p) => p.text)
    .filter((t): t is string => typeof t === 'string' && t.length > 0);
}

/**
 * Translates Responses input items into neutral messages. An assistant text item, reasoning and
 * the function calls that follow it form one assistant message (as the model produced them).
 */
export function responsesInputToNeutral(body: ResponsesRequest): Message[] {
  const out: Message[] = [];
  if (body.instructions) out.push({ role: 'system', content: body.instructions });
  const input = body.input;
  if (input == null) return out;
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  let assistant = null as AssistantMessage | null;
  let pendingReasoning: string[] = [];
  const openAssistant = (): AssistantMessage => {
    if (!assistant) {
      assistant = { role: 'assistant', content: null };
      out.push(assistant);
    }
    if (pendingReasoning.length) {
      assistant.reasoning = [assistant.reasoning, ...pendingReasoning].filter(Boolean).join('\n\n');
      pendingReasoning = [];
    }
    return assistant;
  };
  for (const raw of input) {
    const item = raw as Part;
    const type = item.type ?? 'message';
    if (type === 'message' && typeof item.role === 'string') {
      const content = item.content as string | Part[];
      if (item.role === 'assistant') {
        const message = openAssistant();
        const text = partsText(content);
        message.content = message.content ? `${message.content}\n\n${text}` : text;
        continue;
      }
      assistant = null;
      if (item.role === 'user') out.push({ role: 'user', content: userParts(content) });
      else out.push({ role: 'system', content: partsText(content) });
    } else if (type === 'function_call' || type === 'custom_tool_call') {
      const message = openAssistant();
      message.toolCalls = [...(message.toolCalls ?? []), toolCallOf(item)];
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      assistant = null;
      out.push({ role: 'tool', toolCallId: item.call_id as string, content: partsText(item.output as string | Part[]) });
    } else if (type === 'reasoning') {
      const texts = reasoningTexts(item);
      if (assistant && !assistant.toolCalls && assistant.content === null) assistant.reasoning = texts.join('\n\n');
      else {
        assistant = null;
        pendingReasoning.push(...texts);
      }
    }
    // Other item types (web search calls, item references, compaction) carry nothing the model
    // needs to see again in the neutral form; they are skipped.
  }
  return out;
}

function functionDefinition(tool: Part, name: string): ToolDefinition {
  const definition: ToolDefinition = {
    name,
    parameters: (tool.parameters as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} },
  };
  if (typeof tool.description === 'string' && tool.description) definition.description = tool.description;
  return definition;
}

/**
 * The request's `function` tools, and the functions of its `namespace` entries flattened to
 * `<namespace>__<name>` (recorded in `namespaced` so the reply can split them again). Hosted tools
 * (`web_search`, …) and freeform `custom` tools are not offered to the model.
 */
function responsesTools(tools: ResponsesRequest['tools'], namespaced: Map<string, WireToolName>): ToolDefinition[] | undefined {
  if (!tools?.length) return undefined;
  const out: ToolDefinition[] = [];
  for (const tool of tools as Part[]) {
    if (tool.type === 'function' && typeof tool.name === 'string') out.push(functionDefinition(tool, tool.name));
    else if (tool.type === 'namespace' && typeof tool.name === 'string' && Array.isArray(tool.tools)) {
      for (const inner of tool.tools as Part[]) {
        if (inner?.type !== 'function' || typeof inner.name !== 'string') continue;
        const name = namespacedToolName(tool.name, inner.name);
        namespaced.set(name, { namespace: tool.name, name: inner.name });
        out.push(functionDefinition(inner, name));
      }
    }
  }
  return out.length ? out : undefined;
}

/** Namespaced functions the conversation already called (their tool entry may be gone since). */
function namespacedInputCalls(input: ResponsesRequest['input'], namespaced: Map<string, WireToolName>): void {
  if (!Array.isArray(input)) return;
  for (const raw of input) {
    const item = raw as Part;
    if (item.type === 'function_call' && typeof item.namespace === 'string' && item.namespace && typeof item.name === 'string') {
      const name = namespacedToolName(item.namespace, item.name);
      if (!namespaced.has(name)) namespaced.set(name, { namespace: item.namespace, name: item.name });
    }
  }
}

function responsesToolChoice(choice: ResponsesRequest['tool_choice']): ToolChoice | undefined {
  if (choice == null) return undefined;
  if (typeof choice === 'string') return choice === 'auto' || choice === 'none' || choice === 'required' ? choice : undefined;
  return choice.type === 'function' && choice.name ? { name: choice.name } : undefined;
}

// ---- neutral -> wire reply ----------------------------------------------------------------------

function responsesUsage(usage: Usage): Record<string, unknown> {
  const input = inputTokensWithCache(usage);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: input + usage.completionTokens,
  };
}

interface OutputPlan {
  id: string;
  items: Record<string, unknown>[];
}

function responseId(response: ModelResponse): string {
  return response.id.startsWith('resp_') ? response.id : `resp_${response.id || wireId('')}`;
}

function outputItems(response: ModelResponse, parsed?: ParsedWireRequest): OutputPlan {
  const namespaced = parsed ? namespacedCalls.get(parsed.request) : undefined;
  const id = responseId(response);
  const items: Record<string, unknown>[] = [];
  const message = response.message;
  if (message.reasoning) {
    items.push({ type: 'reasoning', id: wireId('rs_'), summary: [{ type: 'summary_text', text: message.reasoning }] });
  }
  if (message.content) {
    items.push({
      type: 'message',
      id: wireId('msg_'),
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: message.content, annotations: [], logprobs: [] }],
    });
  }
  for (const call of message.toolCalls ?? []) {
    const wire = namespaced?.get(call.name);
    items.push({
      type: 'function_call',
      id: wireId('fc_'),
      call_id: call.id,
      name: wire ? wire.name : call.name,
      ...(wire ? { namespace: wire.namespace } : {}),
      arguments: call.arguments,
      status: 'completed',
    });
  }
  return { id, items };
}

function responseObject(
  response: ModelResponse,
  plan: OutputPlan,
  status: 'in_progress' | 'completed' | 'incomplete',
  output: Record<string, unknown>[],
): Record<string, unknown> {
  return {
    id: plan.id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model: response.model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: status === 'in_progress' ? null : responsesUsage(response.usage),
  };
}

function finalStatus(response: ModelResponse): 'completed' | 'incomplete' {
  return response.finishReason === 'length' ? 'incomplete' : 'completed';
}

function renderResponsesStream(response: ModelResponse, parsed?: ParsedWireRequest): string[] {
  const plan = outputItems(response, parsed);
  const frames: string[] = [];
  let sequence = 0;
  const emit = (type: string, data: Record<string, unknown>) =>
    frames.push(sseFrame(type, { type, sequence_number: sequence++, ...data }));
  emit('response.created', { response: responseObject(response, plan, 'in_progress', []) });
  emit('response.in_progress', { response: responseObject(response, plan, 'in_progress', []) });
  plan.items.forEach((item, outputIndex) => {
    const itemId = item.id as string;
    if (item.type === 'reasoning') {
      const text = (item.summary as { text: string }[])[0]?.text ?? '';
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, summary: [] } });
      const part = { type: 'summary_text', text: '' };
      emit('response.reasoning_summary_part.added', { item_id: itemId, output_index: outputIndex, summary_index: 0, part });
      for (const delta of splitDeltas(text)) {
        emit('response.reasoning_summary_text.delta', { item_id: itemId, output_index: outputIndex, summary_index: 0, delta });
      }
      emit('response.reasoning_summary_text.done', { item_id: itemId, output_index: outputIndex, summary_index: 0, text });
      emit('response.reasoning_summary_part.done', {
        item_id: itemId,
        output_index: outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text },
      });
    } else if (item.type === 'message') {
      const text = (item.content as { text: string }[])[0]?.text ?? '';
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      const empty = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      emit('response.content_part.added', { item_id: itemId, output_index: outputIndex, content_index: 0, part: empty });
      for (const delta of splitDeltas(text)) {
        emit('response.output_text.delta', { item_id: itemId, output_index: outputIndex, content_index: 0, delta, logprobs: [] });
      }
      emit('response.output_text.done', { item_id: itemId, output_index: outputIndex, content_index: 0, text, logprobs: [] });
      emit('response.content_part.done', {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: { ...empty, text },
      });
    } else {
      const args = item.arguments as string;
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, arguments: '', status: 'in_progress' } });
      for (const delta of splitDeltas(args, 64)) {
        emit('response.function_call_arguments.delta', { item_id: itemId, output_index: outputIndex, delta });
      }
      emit('response.function_call_arguments.done', { item_id: itemId, output_index: outputIndex, arguments: args });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  const status = finalStatus(response);
  emit(status === 'completed' ? 'response.completed' : 'response.incomplete', {
    response: responseObject(response, plan, status, plan.items),
  });
  return frames;
}

/** OpenAI Responses (`POST /v1/responses`): what Codex speaks. */
export const responsesDialect: WireDialect = {
  name: 'responses',
  parseRequest(body: unknown): ParsedWireRequest {
    const wire = isResponsesRequest(body) ? body : parseWire(ResponsesRequestSchema, body, 'responses request');
    if (wire.previous_response_id) {
      throw new WireRequestError('previous_response_id: not supported; send the whole conversation in input (store: false)', {
        param: 'previous_response_id',
      });
    }
    // The program's temperature / top_p are dropped: the run's sampling decides.
    const sampling: Sampling = {};
    if (wire.max_output_tokens != null) sampling.maxTokens = wire.max_output_tokens;
    const effort = mapEffort(wire.reasoning?.effort);
    if (effort) sampling.reasoningEffort = effort;
    const request: ModelRequest = { model: wire.model, messages: responsesInputToNeutral(wire), sampling };
    const namespaced = new Map<string, WireToolName>();
    const tools = responsesTools(wire.tools, namespaced);
    if (tools) request.tools = tools;
    namespacedInputCalls(wire.input, namespaced);
    const toolChoice = responsesToolChoice(wire.tool_choice);
    if (toolChoice) request.toolChoice = toolChoice;
    if (namespaced.size) namespacedCalls.set(request, namespaced);
    return { request, stream: wire.stream === true, includeUsage: true, logprobs: false, returnTokenIds: false };
  },
  renderResponse(response: ModelResponse, parsed: ParsedWireRequest): unknown {
    const plan = outputItems(response, parsed);
    const body = responseObject(response, plan, finalStatus(response), plan.items);
    const text = plan.items
      .filter((item) => item.type === 'message')
      .map((item) => (item.content as { text: string }[])[0]?.text ?? '')
      .join('');
    return { ...body, output_text: text };
  },
  renderStream: renderResponsesStream,
  errorBody: openaiErrorBody,
  streamError: (error) => {
    const body = openaiErrorBody(error) as { error: { message: string; type: string; code: number } };
    return sseFrame('error', { ...body.error, type: 'error', sequence_number: 0, code: String(body.error.code) });
  },
  heartbeat: () =>
    sseFrame('response.in_progress', {
      type: 'response.in_progress',
      sequence_number: 0,
      response: { id: wireId('resp_'), object: 'response', status: 'in_progress', output: [] },
    }),
};
