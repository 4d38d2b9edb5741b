import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import OpenAI from 'openai';

/** What `postJson` is told besides the URL and body. */
export interface JsonPostOptions {
  headers: Record<string, string>;
  /** Aborts the call with the SDK's `APIUserAbortError`. */
  signal?: AbortSignal | undefined;
  /** Whole-call timeout (the SDK's `APIConnectionTimeoutError` past it). */
  timeoutMs: number;
}

/** A reply whose status is 2xx but whose body is not JSON. */
export class NotJsonReplyError extends Error {
  override readonly name = 'NotJsonReplyError';
}

const agentOptions = { keepAlive: true, maxSockets: 256, scheduling: 'lifo' as const };
let httpAgent: HttpAgent | undefined;
let httpsAgent: HttpsAgent | undefined;

/**
 * One JSON POST on `node:http` keep-alive agents, parsed into a value: the lean transport of
 * `OpenAICompatibleClient`'s non-streaming calls. The `openai` SDK's per-request machinery
 * (header building, the WHATWG `Response` and its streams, request logging) cost about as much
 * CPU as the rest of an interception hop put together; this keeps its observable behaviour:
 * a non-2xx reply throws the SDK's own `APIError` subclass (with the body's `error` and the reply
 * headers, so retry-after is honoured), a connection failure or truncated body throws
 * `APIConnectionError`, the timeout `APIConnectionTimeoutError`, an abort `APIUserAbortError`.
 */
export function postJson(url: URL, body: string, options: JsonPostOptions): Promise<unknown> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(new OpenAI.APIUserAbortError());
  const secure = url.protocol === 'https:';
  const agent = secure ? (httpsAgent ??= new HttpsAgent(agentOptions)) : (httpAgent ??= new HttpAgent(agentOptions));
  return new Promise<unknown>((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(url, {
      method: 'POST',
      agent,
      headers: { ...options.headers, 'content-length': Buffer.byteLength(body) },
    });
    let settled = false;
    const timer = setTimeout(() => {
      fail(new OpenAI.APIConnectionTimeoutError());
      req.destroy();
    }, options.timeoutMs);
    const onAbort = () => {
      fail(new OpenAI.APIUserAbortError());
      req.destroy();
    };
    const done = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    function fail(error: unknown): void {
      if (settled) return;
      done();
      reject(error);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    req.setNoDelay(true);
    req.on('error', (error) => fail(new OpenAI.APIConnectionError({ cause: error })));
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => fail(new OpenAI.APIConnectionError({ message: 'Connection error: reply body', cause: error })));
      res.on('aborted', () => fail(new OpenAI.APIConnectionError({ message: 'Connection error: reply body cut short' })));
      res.on('end', () => {
        if (settled) return;
        if (!res.complete) return fail(new OpenAI.APIConnectionError({ message: 'Connection error: reply body cut short' }));
        done();
        const status = res.statusCode ?? 502;
        const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
        if (status < 200 || status > 299) {
          const json = safeJson(text);
          reject(OpenAI.APIError.generate(status, json, json === undefined ? text : undefined, headersOf(res.headers)));
          return;
        }
        try {
          resolve(JSON.parse(text));
        } catch (error) {
          reject(new NotJsonReplyError(`reply is not JSON: ${(error as Error).message}`));
        }
      });
    });
    req.end(body);
  });
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function headersOf(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else if (value !== undefined) headers.set(key, value);
  }
  return headers;
}
