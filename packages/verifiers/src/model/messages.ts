import { z } from 'zod';

/** One part of a multimodal user message. */
export const ContentPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), url: z.string(), mediaType: z.string().optional() }),
]);
export type ContentPart = z.infer<typeof ContentPartSchema>;

/** A tool call made by the model. `arguments` is the raw JSON text the model produced. */
export const ToolCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const SystemMessageSchema = z.object({ role: z.literal('system'), content: z.string() });
export const UserMessageSchema = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(ContentPartSchema)]),
});
export const AssistantMessageSchema = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  toolCalls: z.array(ToolCallSchema).optional(),
  /** Reasoning text (OpenAI `reasoning_content`, Anthropic `thinking`), kept apart from content. */
  reasoning: z.string().optional(),
});
export const ToolMessageSchema = z.object({
  role: z.literal('tool'),
  toolCallId: z.string(),
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
export type Message = z.infer<typeof MessageSchema>;
export type SystemMessage = z.infer<typeof SystemMessageSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolMessage = z.infer<typeof ToolMessageSchema>;

/** A function tool offered to the model (JSON schema parameters). */
export const ToolDefinitionSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
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
