import { z } from 'zod';

/** One part of a multimodal user message. */
export const ContentPartSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('text'),
    /** The text of the part. */
    text: z.string(),
  }),
  z.object({
    type: z.literal('image'),
    /** An `http(s)` URL or a `data:<media type>;base64,…` URL (Anthropic base64 sources arrive as the latter). */
    url: z.string(),
    /** The image's media type (e.g. `image/png`), when the dialect sent one apart from the URL. */
    mediaType: z.string().optional(),
  }),
]);
/** One part of a multimodal user message: `{ type: 'text', text }` or `{ type: 'image', url, mediaType? }`. */
export type ContentPart = z.infer<typeof ContentPartSchema>;

/** A tool call made by the model. `arguments` is the raw JSON text the model produced. */
export const ToolCallSchema = z.object({
  /** The call id the model gave it; the answering {@link ToolMessage} carries it as `toolCallId`. */
  id: z.string(),
  /** The name of the tool called (a {@link ToolDefinition}'s `name`). */
  name: z.string(),
  /** The arguments as the raw JSON text the model produced (not parsed; it may be invalid JSON). */
  arguments: z.string(),
});
/** A tool call made by the model, as {@link ToolCallSchema} parses it. */
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** The system prompt (OpenAI `system` / `developer`, Anthropic's top-level `system`). */
export const SystemMessageSchema = z.object({
  role: z.literal('system'),
  /** The instructions, as text. */
  content: z.string(),
});
/** A user turn: text, or text and image parts. */
export const UserMessageSchema = z.object({
  role: z.literal('user'),
  /** Plain text, or a list of {@link ContentPart}s (multimodal input). */
  content: z.union([z.string(), z.array(ContentPartSchema)]),
});
/** A model reply: text, tool calls or both, and the reasoning text when the server returned it. */
export const AssistantMessageSchema = z.object({
  role: z.literal('assistant'),
  /** The reply text; null when the reply is only tool calls. */
  content: z.string().nullable(),
  /** The tools the model called in this reply, in order. */
  toolCalls: z.array(ToolCallSchema).optional(),
  /** Reasoning text (OpenAI `reasoning_content`, Anthropic `thinking`), kept apart from content. */
  reasoning: z.string().optional(),
});
/** The result of one tool call, sent back to the model. */
export const ToolMessageSchema = z.object({
  role: z.literal('tool'),
  /** The `id` of the {@link ToolCall} this answers. */
  toolCallId: z.string(),
  /** The tool's output, as text. */
  content: z.string(),
  /** Set when the tool reported a failure (Anthropic `is_error`). */
  isError: z.boolean().optional(),
});

/**
 * The dialect-neutral message every wire format is translated to. OpenAI chat, OpenAI
 * responses and Anthropic messages all map onto these four roles.
 */
export const MessageSchema = z.discriminatedUnion('role', [
  SystemMessageSchema,
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);
/** A dialect-neutral message (system, user, assistant or tool), discriminated on `role`. */
export type Message = z.infer<typeof MessageSchema>;
/** A system prompt message (`role: 'system'`); see {@link SystemMessageSchema}. */
export type SystemMessage = z.infer<typeof SystemMessageSchema>;
/** A user message (`role: 'user'`), text or {@link ContentPart}s; see {@link UserMessageSchema}. */
export type UserMessage = z.infer<typeof UserMessageSchema>;
/** A model reply (`role: 'assistant'`) with optional tool calls and reasoning; see {@link AssistantMessageSchema}. */
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
/** A tool result (`role: 'tool'`) answering one tool call; see {@link ToolMessageSchema}. */
export type ToolMessage = z.infer<typeof ToolMessageSchema>;

/** A function tool offered to the model (JSON schema parameters). */
export const ToolDefinitionSchema = z.object({
  /** The name the model calls it by. */
  name: z.string(),
  /** What the tool does, shown to the model. */
  description: z.string().optional(),
  /** A JSON Schema of the arguments object (default: an object with no declared properties). */
  parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
});
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/** The plain text of a message's content (text parts joined by blank lines). */
export function contentText(content: string | null | ContentPart[] | undefined): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
    .map((part) => part.text)
    .join('\n\n');
}
