import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { WireRequestError } from '../../errors/wire-request-error.ts';
import type { ModelRequest, ModelResponse, Usage } from '../../model/model-client.ts';

export { WireRequestError };

/** The wire dialects interception (and the scripted model server) speak. */
export type DialectName = 'chat' | 'responses' | 'messages';

/** A wire request translated to the neutral form, plus what the reply must look like. */
export interface ParsedWireRequest {
  request: ModelRequest;
  /** The program asked for server-sent events. */
  stream: boolean;
  /** Chat: `stream_options.include_usage` (a final usage chunk). */
  includeUsage: boolean;
  /** Chat: `logprobs: true` (per-token logprobs in the reply). */
  logprobs: boolean;
  /** Chat (vLLM): `return_token_ids: true` (prompt and completion token ids in the reply). */
  returnTokenIds: boolean;
}

/** How a wire error is shaped: status, message and an OpenAI-style or Anthropic-style type. */
export interface WireErrorInput {
  status: number;
  message: string;
  /** Overrides the type derived from the status (e.g. `invalid_request_error`). */
  type?: string;
  /** The offending request field, when known. */
  param?: string | null;
}

/**
 * One wire format, both ways on the server side: a wire request into a `ModelRequest`, and a
 * `ModelResponse` back into that dialect's JSON body or SSE frames. The same translators serve
 * the interception server and the scripted model server, so the wire formats exist once.
 */
export interface WireDialect {
  readonly name: DialectName;
  /** Validates and translates a parsed JSON body; throws `WireRequestError` (400) naming the field. */
  parseRequest(body: unknown): ParsedWireRequest;
  /** The non-streaming JSON reply. */
  renderResponse(response: ModelResponse, parsed: ParsedWireRequest): unknown;
  /** The streaming reply as complete SSE frames (each ends with a blank line), in wire order. */
  renderStream(response: ModelResponse, parsed: ParsedWireRequest): string[];
  /** The JSON body of an error reply. */
  errorBody(error: WireErrorInput): unknown;
  /** An error reported inside an already-started stream. */
  streamError(error: WireErrorInput): string;
  /** A frame that keeps an idle stream alive (`first` = the first frame of the stream). */
  heartbeat(first: boolean, parsed: ParsedWireRequest): string;
}

/** Parses `body` with `schema`, turning a zod failure into a `WireRequestError` naming the field. */
export function parseWire<T extends z.ZodType>(schema: T, body: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.map(String).join('.') ?? '';
  const message = `invalid ${what}: ${path ? `${path}: ` : ''}${issue?.message ?? 'invalid input'}`;
  throw new WireRequestError(message, { param: path || null });
}

/** One SSE frame; `event` is omitted when null. */
export function sseFrame(event: string | null, data: unknown): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  return event ? `event: ${event}\ndata: ${json}\n\n` : `data: ${json}\n\n`;
}

const idPrefix = randomBytes(6).toString('hex');
let idCounter = 0;

/** A unique, cheap id with a dialect prefix (`chatcmpl-…`, `resp_…`, `msg_…`). */
export function wireId(prefix: string): string {
  idCounter = (idCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${prefix}${idPrefix}${idCounter.toString(36)}`;
}

/** Splits text into stream deltas of roughly `size` characters, breaking after whitespace. */
export function splitDeltas(text: string, size = 48): string[] {
  if (text.length <= size) return text ? [text] : [];
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      if (space > start) end = space + 1;
    }
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

/** Total input tokens as the OpenAI wire reports them (cached tokens included). */
export function inputTokensWithCache(usage: Usage): number {
  return usage.promptTokens + (usage.cachedInputTokens ?? 0);
}

/** Maps any reasoning-effort word onto the neutral scale; unknown / `none` → undefined. */
export function mapEffort(value: string | null | undefined): 'minimal' | 'low' | 'medium' | 'high' | undefined {
  switch (value) {
    case 'minimal':
    case 'low':
    case 'medium':
    case 'high':
      return value;
    case 'xhigh':
    case 'max':
      return 'high';
    default:
      return undefined;
  }
}

/** OpenAI-style error `type` for an HTTP status. */
export function openaiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 409) return 'conflict_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Parses a JSON arguments string into an object (Anthropic `input`); `{}` when it is not an object. */
export function argumentsObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
