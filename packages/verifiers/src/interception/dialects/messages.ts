import { z } from 'zod';
import type { AssistantMessage, ContentPart, Message, ToolDefinition } from '../../model/messages.ts';
import type { ModelRequest, ModelResponse, Sampling, ToolChoice, Usage } from '../../model/model-client.ts';
import {
  isNullish,
  isNumber,
  isObject,
  isStringArray,
  isTextOrTyped,
  nullishBoolean,
  nullishPositiveInt,
  nullishString,
} from '../../wire/json-checks.ts';
import {
  argumentsObject,
  mapEffort,
  type ParsedWireRequest,
  parseWire,
  splitDeltas,
  sseFrame,
  type WireDialect,
  type WireErrorInput,
  wireId,
} from './dialect.ts';

// ---- wire schemas (Anthropic Messages API) ------------------------------------------------------

const BlockSchema = z.looseObject({ type: z.string() });
const BlocksSchema = z.union([z.string(), z.array(BlockSchema)]);

/** An Anthropic messages request body (what Claude Code and pi send). Unknown fields are accepted. */
export const MessagesRequestSchema = z.looseObject({
  model: z.string(),
  max_tokens: z.number().int().positive().nullish(),
  system: BlocksSchema.nullish(),
  messages: z.array(
    z.looseObject({
      // `system` mid-conversation: Claude Code's mid-conversation-system beta.
      role: z.enum(['user', 'assistant', 'system']),
      content: BlocksSchema,
    }),
  ),
  tools: z.array(z.looseObject({ name: z.string() })).nullish(),
  tool_choice: z.looseObject({ type: z.string(), name: z.string().optional() }).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  thinking: z.looseObject({ type: z.string(), budget_tokens: z.number().nullish() }).nullish(),
  output_config: z.looseObject({ effort: z.string().nullish() }).nullish(),
  stream: z.boolean().nullish(),
});
/**
 * An Anthropic Messages API request body as interception accepts it (snake_case wire fields; unknown
 * fields kept); see {@link MessagesRequestSchema}.
 */
export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

/**
 * True only for a body {@link MessagesRequestSchema} accepts, walked without copying it (a false
 * answer means: parse with the schema, which names the bad field). Claude Code's requests carry
 * long conversations and tool lists that zod would rebuild object by object on every call.
 */
export function isMessagesRequest(body: unknown): body is MessagesRequest {
  if (!isObject(body) || typeof body.model !== 'string' || !Array.isArray(body.messages)) return false;
  for (const message of body.messages) {
    if (!isObject(message) || !isTextOrTyped(message.content)) return false;
    if (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system') return false;
  }
  if (!isNullish(body.tools)) {
    if (!Array.isArray(body.tools)) return false;
    for (const tool of body.tools) if (!isObject(tool) || typeof tool.name !== 'string') return false;
  }
  const { tool_choice: choice, thinking, output_config: output } = body;
  return (
    nullishPositiveInt(body.max_tokens) &&
    (isNullish(body.system) || isTextOrTyped(body.system)) &&
    (isNullish(choice) ||
      (isObject(choice) && typeof choice.type === 'string' && (choice.name === undefined || typeof choice.name === 'string'))) &&
    (isNullish(body.stop_sequences) || isStringArray(body.stop_sequences)) &&
    (isNullish(thinking) ||
      (isObject(thinking) &&
        typeof thinking.type === 'string' &&
        (isNullish(thinking.budget_tokens) || isNumber(thinking.budget_tokens)))) &&
    (isNullish(output) || (isObject(output) && nullishString(output.effort))) &&
    nullishBoolean(body.stream)
  );
}

// ---- wire request -> neutral --------------------------------------------------------------------

type Block = { type: string; [key: string]: unknown };

function blocksText(content: string | Block[]): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const block of content) if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
  return texts.join('\n\n');
}

function imagePart(block: Block): ContentPart | null {
  const source = block.source as { type?: string; media_type?: string; data?: string; url?: string } | undefined;
  if (!source) return null;
  if (source.type === 'base64' && source.data) {
    const part: ContentPart = { type: 'image', url: `data:${source.media_type ?? 'image/png'};base64,${source.data}` };
    if (source.media_type) part.mediaType = source.media_type;
    return part;
  }
  if (source.type === 'url' && source.url) return { type: 'image', url: source.url };
  return null;
}

function toolResultText(content: unknown): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return blocksText(content as Block[]);
  return JSON.stringify(content);
}

/** Translates Anthropic messages (and the top-level `system`) into neutral messages. */
export function anthropicMessagesToNeutral(body: MessagesRequest): Message[] {
  const out: Message[] = [];
  if (body.system != null) {
    const system = blocksText(body.system as string | Block[]);
    if (system) out.push({ role: 'system', content: system });
  }
  for (const message of body.messages) {
    const content = message.content as string | Block[];
    if (message.role === 'system') {
      out.push({ role: 'system', content: blocksText(content) });
    } else if (message.role === 'assistant') {
      const assistant: AssistantMessage = { role: 'assistant', content: null };
      if (typeof content === 'string') assistant.content = content;
      else {
        const texts: string[] = [];
        const thinking: string[] = [];
        for (const block of content) {
          if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
          else if (block.type === 'thinking' && typeof block.thinking === 'string') thinking.push(block.thinking);
          else if (block.type === 'tool_use' || block.type === 'server_tool_use') {
            const call = { id: String(block.id), name: String(block.name), arguments: JSON.stringify(block.input ?? {}) };
            assistant.toolCalls = [...(assistant.toolCalls ?? []), call];
          }
        }
        if (texts.length) assistant.content = texts.join('\n\n');
        if (thinking.length) assistant.reasoning = thinking.join('\n\n');
      }
      out.push(assistant);
    } else {
      if (typeof content === 'string') {
        out.push({ role: 'user', content });
        continue;
      }
      // tool_result blocks come first in a user turn; each becomes a tool message.
      const parts: ContentPart[] = [];
      for (const block of content) {
        if (block.type === 'tool_result') {
          const tool: Message = { role: 'tool', toolCallId: String(block.tool_use_id), content: toolResultText(block.content) };
          if (block.is_error === true) tool.isError = true;
          out.push(tool);
        } else if (block.type === 'text' && typeof block.text === 'string') parts.push({ type: 'text', text: block.text });
        else if (block.type === 'image') {
          const image = imagePart(block);
          if (image) parts.push(image);
        }
      }
      if (parts.length) out.push({ role: 'user', content: parts });
    }
  }
  return out;
}

function anthropicTools(tools: MessagesRequest['tools']): ToolDefinition[] | undefined {
  if (!tools?.length) return undefined;
  const out: ToolDefinition[] = [];
  for (const tool of tools) {
    // Server tools (web search, code execution …) have a `type` and no input_schema: skipped.
    if (!tool.input_schema) continue;
    const definition: ToolDefinition = { name: tool.name, parameters: tool.input_schema as Record<string, unknown> };
    if (typeof tool.description === 'string' && tool.description) definition.description = tool.description;
    out.push(definition);
  }
  return out.length ? out : undefined;
}

function anthropicToolChoice(choice: MessagesRequest['tool_choice']): ToolChoice | undefined {
  switch (choice?.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return choice.name ? { name: choice.name } : undefined;
    default:
      return undefined;
  }
}

function anthropicSampling(body: MessagesRequest): Sampling {
  // The program's temperature / top_p are dropped: the run's sampling decides.
  const sampling: Sampling = {};
  if (body.max_tokens != null) sampling.maxTokens = body.max_tokens;
  if (body.stop_sequences?.length) sampling.stop = body.stop_sequences;
  let effort = mapEffort(body.output_config?.effort);
  if (!effort && body.thinking?.type === 'enabled' && body.thinking.budget_tokens != null) {
    const budget = body.thinking.budget_tokens;
    effort = budget < 4096 ? 'low' : budget < 16384 ? 'medium' : 'high';
  }
  if (effort) sampling.reasoningEffort = effort;
  return sampling;
}

// ---- neutral -> wire reply ----------------------------------------------------------------------

function anthropicUsage(usage: Usage): Record<string, unknown> {
  return {
    input_tokens: usage.promptTokens,
    output_tokens: usage.completionTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cachedInputTokens ?? 0,
  };
}

function stopReason(response: ModelResponse): string {
  if (response.finishReason === 'length') return 'max_tokens';
  if (response.finishReason === 'tool_calls' || response.message.toolCalls?.length) return 'tool_use';
  return 'end_turn';
}

function messageId(response: ModelResponse): string {
  return response.id.startsWith('msg_') ? response.id : `msg_${response.id || wireId('')}`;
}

function contentBlocks(response: ModelResponse): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  const message = response.message;
  if (message.reasoning) blocks.push({ type: 'thinking', thinking: message.reasoning, signature: '' });
  if (message.content) blocks.push({ type: 'text', text: message.content });
  for (const call of message.toolCalls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: argumentsObject(call.arguments) });
  }
  return blocks;
}

function renderMessagesStream(response: ModelResponse): string[] {
  const frames: string[] = [];
  const emit = (type: string, data: Record<string, unknown>) => frames.push(sseFrame(type, { type, ...data }));
  const usage = anthropicUsage(response.usage);
  emit('message_start', {
    message: {
      id: messageId(response),
      type: 'message',
      role: 'assistant',
      model: response.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 0 },
    },
  });
  let index = 0;
  const message = response.message;
  if (message.reasoning) {
    emit('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const piece of splitDeltas(message.reasoning)) {
      emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } });
    }
    emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: '' } });
    emit('content_block_stop', { index });
    index++;
  }
  if (message.content) {
    emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const piece of splitDeltas(message.content))
      emit('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    emit('content_block_stop', { index });
    index++;
  }
  for (const call of message.toolCalls ?? []) {
    emit('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    // The arguments travel as the model wrote them (programs parse the concatenated JSON).
    for (const piece of splitDeltas(call.arguments, 64)) {
      emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    }
    emit('content_block_stop', { index });
    index++;
  }
  emit('message_delta', { delta: { stop_reason: stopReason(response), stop_sequence: null }, usage });
  emit('message_stop', {});
  return frames;
}

function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

function anthropicErrorBody(error: WireErrorInput): unknown {
  return { type: 'error', error: { type: error.type ?? anthropicErrorType(error.status), message: error.message } };
}

/** Anthropic messages (`POST /v1/messages`): what Claude Code speaks. */
export const messagesDialect: WireDialect = {
  name: 'messages',
  parseRequest(body: unknown): ParsedWireRequest {
    const wire = isMessagesRequest(body) ? body : parseWire(MessagesRequestSchema, body, 'messages request');
    const request: ModelRequest = {
      model: wire.model,
      messages: anthropicMessagesToNeutral(wire),
      sampling: anthropicSampling(wire),
    };
    const tools = anthropicTools(wire.tools);
    if (tools) request.tools = tools;
    const toolChoice = anthropicToolChoice(wire.tool_choice);
    if (toolChoice) request.toolChoice = toolChoice;
    return { request, stream: wire.stream === true, includeUsage: true, logprobs: false, returnTokenIds: false };
  },
  renderResponse(response: ModelResponse): unknown {
    return {
      id: messageId(response),
      type: 'message',
      role: 'assistant',
      model: response.model,
      content: contentBlocks(response),
      stop_reason: stopReason(response),
      stop_sequence: null,
      usage: anthropicUsage(response.usage),
    };
  },
  renderStream: renderMessagesStream,
  errorBody: anthropicErrorBody,
  streamError: (error) => sseFrame('error', anthropicErrorBody(error)),
  heartbeat: () => sseFrame('ping', { type: 'ping' }),
};
