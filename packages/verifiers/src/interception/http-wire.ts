import type { IncomingMessage, ServerResponse } from 'node:http';
import { chatDialect } from './dialects/chat.ts';
import { type DialectName, type WireDialect, WireRequestError } from './dialects/dialect.ts';
import { messagesDialect } from './dialects/messages.ts';
import { responsesDialect } from './dialects/responses.ts';

/** The dialect translators by name. */
export const dialects: Record<DialectName, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: messagesDialect,
};

/** What a request path asks for. Any path prefix is accepted (`/run/abc/v1/messages`). */
export type Route =
  | { kind: 'model-call'; dialect: WireDialect }
  | { kind: 'count-tokens'; dialect: WireDialect }
  | { kind: 'models'; dialect: WireDialect }
  | { kind: 'not-found'; dialect: WireDialect };

/** Routes on the path's suffix, ignoring the query string (`?beta=true`) and any prefix. */
export function routeOf(method: string | undefined, url: string | undefined): Route {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  let path = q === -1 ? raw : raw.slice(0, q);
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (method === 'POST') {
    if (path.endsWith('/chat/completions')) return { kind: 'model-call', dialect: chatDialect };
    if (path.endsWith('/responses')) return { kind: 'model-call', dialect: responsesDialect };
    if (path.endsWith('/messages/count_tokens')) return { kind: 'count-tokens', dialect: messagesDialect };
    if (path.endsWith('/messages')) return { kind: 'model-call', dialect: messagesDialect };
  }
  if (method === 'GET' && path.endsWith('/models')) return { kind: 'models', dialect: chatDialect };
  return { kind: 'not-found', dialect: path.includes('/messages') ? messagesDialect : chatDialect };
}

/** The key a program sent: `Authorization: Bearer <key>` or `x-api-key`. */
export function secretOf(req: IncomingMessage): string | null {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey) return apiKey;
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') return auth.slice(7).trim();
  return null;
}

/** Reads the whole body, refusing more than `limit` bytes with a 413 `WireRequestError`. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new WireRequestError(`request body exceeds ${limit} bytes`, { status: 413 }));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new WireRequestError(`request body exceeds ${limit} bytes`, { status: 413 }));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    req.on('error', (error) => {
      if (!failed) {
        failed = true;
        reject(error);
      }
    });
  });
}

/**
 * How deeply a request body may nest objects and arrays (default of {@link parseJsonBody}). Real
 * requests nest a few dozen levels (a tool's JSON schema); far deeper ones exist only to overflow
 * the stack of whatever walks them later (hashing, re-serializing, schema checks).
 */
export const MAX_JSON_DEPTH = 256;

/**
 * Parses a JSON body; malformed JSON, or JSON nesting deeper than `maxDepth`, is a 400
 * `WireRequestError` (nothing downstream then recurses deeper than that).
 */
export function parseJsonBody(body: Buffer, maxDepth = MAX_JSON_DEPTH): unknown {
  if (body.length === 0) throw new WireRequestError('request body is empty (expected JSON)');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new WireRequestError(`request body is not valid JSON: ${(error as Error).message}`);
  }
  if (nestsDeeperThan(value, maxDepth)) {
    throw new WireRequestError(`request body nests objects and arrays more than ${maxDepth} levels deep`);
  }
  return value;
}

/** Whether `value` nests objects/arrays more than `max` levels deep (walked without recursion). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const item = stack.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    const children = Array.isArray(item) ? item : Object.values(item);
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Writes a JSON reply (no-op when the socket is already gone). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  if (res.headersSent || res.destroyed) {
    if (!res.writableEnded && !res.destroyed) res.end();
    return;
  }
  const text = JSON.stringify(body);
  // Headers as one flat [name, value, …] list: Node stores them without an object walk.
  const head = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(text))];
  if (headers) {
    for (const name in headers) {
      const value = headers[name] as string;
      // Same keys as an object spread over the defaults: `content-type` / `content-length` replace them.
      if (name === 'content-type') head[1] = value;
      else if (name === 'content-length') head[3] = value;
      else head.push(name, value);
    }
  }
  res.writeHead(status, head);
  res.end(text);
}

/** Headers of an SSE reply. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/**
 * A rough token estimate for `count_tokens` (4 characters per token). A value that cannot be
 * serialized (a cycle; nesting past the stack) is estimated from `fallbackChars` (the body's size).
 */
export function estimateTokens(value: unknown, fallbackChars = 0): number {
  let chars: number;
  try {
    chars = JSON.stringify(value ?? '').length;
  } catch {
    chars = fallbackChars;
  }
  return Math.max(1, Math.ceil(chars / 4));
}

/** The body of `GET /v1/models` for one model, readable as OpenAI and as Anthropic. */
export function modelsBody(model: string): unknown {
  return {
    object: 'list',
    data: [
      {
        id: model,
        object: 'model',
        type: 'model',
        created: 0,
        created_at: '1970-01-01T00:00:00Z',
        owned_by: 'troupe',
        display_name: model,
      },
    ],
    has_more: false,
    first_id: model,
    last_id: model,
  };
}
