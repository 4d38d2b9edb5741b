import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import OpenAI from 'openai';
import { ConfigError, ProviderError } from '../errors/troupe-error.ts';
import { AbortRelay } from '../util/abort-relay.ts';
import { parseChatReply } from '../wire/chat-reply-parse.ts';
import { Http1Call, type Http1Failure, Http1Pool, type Http1Reply, type ReplySink } from './http1-pool.ts';

/** What `postJson` is told besides the URL and body. */
export interface JsonPostOptions {
  headers: Record<string, string>;
  /** Aborts the call with the SDK's `APIUserAbortError`. */
  signal?: AbortSignal | undefined;
  /** Whole-call timeout (the SDK's `APIConnectionTimeoutError` past it). */
  timeoutMs: number;
}

/** A reply whose status is 2xx but whose body is not JSON. */
export class NotJsonReplyError extends ProviderError {}

/**
 * One JSON POST, parsed into a value: the lean transport of `OpenAICompatibleClient`'s
 * non-streaming calls. `http:` goes through a keep-alive {@link Http1Pool} (one socket write per
 * call, the reply parsed from the socket's chunks), `https:` through a `node:https` keep-alive
 * agent. The `openai` SDK's per-request machinery (header building, the WHATWG `Response` and its
 * streams, request logging) cost about as much CPU as the rest of an interception hop put
 * together; this keeps its observable behaviour: a non-2xx reply throws the SDK's own `APIError`
 * subclass (with the body's `error` and the reply headers, so retry-after is honoured), a
 * connection failure or truncated body throws `APIConnectionError`, the timeout
 * `APIConnectionTimeoutError`, an abort `APIUserAbortError`.
 */
export function postJson(url: URL, body: string, options: JsonPostOptions): Promise<unknown> {
  if (options.signal?.aborted) return Promise.reject(new OpenAI.APIUserAbortError());
  if (url.protocol === 'http:') return postPlain(url, body, options);
  return postSecure(url, body, options);
}

// ---- http: the lean pool ---------------------------------------------------------------------

const pools = new Map<string, Http1Pool>();

/** The request head before its content-length, per URL and headers object (both kept by the client). */
const heads = new WeakMap<URL, { headers: Record<string, string>; head: string }>();

function headOf(url: URL, headers: Record<string, string>): string {
  const cached = heads.get(url);
  if (cached?.headers === headers) return cached.head;
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: keep-alive\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (key === 'content-length' || key === 'host' || key === 'connection' || key === 'transfer-encoding') continue;
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key))
      throw new ConfigError(`invalid HTTP header name ${JSON.stringify(name)}`, { path: `headers.${name}` });
    if (/[\r\n\0]/.test(value))
      throw new ConfigError(`invalid character in HTTP header ${JSON.stringify(name)}`, { path: `headers.${name}` });
    head += `${key}: ${value}\r\n`;
  }
  head += 'content-length: ';
  heads.set(url, { headers, head });
  return head;
}

function poolOf(url: URL): Http1Pool {
  let pool = pools.get(url.host);
  if (!pool) {
    pool = new Http1Pool(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 80));
    pools.set(url.host, pool);
  }
  return pool;
}

/** One call's promise, timer and abort: what the pool tells it settles the promise once. */
class JsonCall implements ReplySink {
  readonly promise: Promise<unknown>;
  private resolve!: (value: unknown) => void;
  private reject!: (error: unknown) => void;
  readonly call: Http1Call;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly pool: Http1Pool,
    data: string,
    readonly signal: AbortSignal | undefined,
    timeoutMs: number,
  ) {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.call = new Http1Call(data, this);
    this.timer = setTimeout(timeOut, timeoutMs, this);
    if (signal) watched.add(signal, this);
  }

  reply(reply: Http1Reply): void {
    this.settle();
    const text = reply.body.toString('utf8');
    if (reply.status < 200 || reply.status > 299) {
      this.reject(errorOf(reply.status, text, new Headers(reply.headers)));
      return;
    }
    try {
      this.resolve(parseChatReply(text));
    } catch (error) {
      this.reject(new NotJsonReplyError(`reply is not JSON: ${(error as Error).message}`));
    }
  }

  fail(failure: Http1Failure): void {
    this.settle();
    this.reject(new OpenAI.APIConnectionError({ message: failure.message, cause: failure.cause as Error | undefined }));
  }

  /** Ends the call from outside (timeout, abort) with `error`. */
  cancel(error: unknown): void {
    if (this.call.done) return;
    this.pool.cancel(this.call);
    this.settle();
    this.reject(error);
  }

  private settle(): void {
    clearTimeout(this.timer);
    if (this.signal) watched.delete(this.signal, this);
  }
}

function timeOut(call: JsonCall): void {
  call.cancel(new OpenAI.APIConnectionTimeoutError());
}

/**
 * Calls in flight per abort signal, with one listener per signal: the interception server passes
 * one signal to every call, and an `EventTarget` listener per call costs more than the set.
 */
const watched = new AbortRelay<JsonCall>((call) => call.cancel(new OpenAI.APIUserAbortError()));

function postPlain(url: URL, body: string, options: JsonPostOptions): Promise<unknown> {
  const pool = poolOf(url);
  const data = `${headOf(url, options.headers)}${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const call = new JsonCall(pool, data, options.signal, options.timeoutMs);
  pool.send(call.call);
  return call.promise;
}

// ---- https: node:https keep-alive agent --------------------------------------------------------

let httpsAgent: HttpsAgent | undefined;

function postSecure(url: URL, body: string, options: JsonPostOptions): Promise<unknown> {
  const { signal } = options;
  httpsAgent ??= new HttpsAgent({ keepAlive: true, maxSockets: 256, scheduling: 'lifo' });
  return new Promise<unknown>((resolve, reject) => {
    const req = httpsRequest(url, {
      method: 'POST',
      agent: httpsAgent,
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
          reject(errorOf(status, text, headersOf(res.headers)));
          return;
        }
        try {
          resolve(parseChatReply(text));
        } catch (error) {
          reject(new NotJsonReplyError(`reply is not JSON: ${(error as Error).message}`));
        }
      });
    });
    req.end(body);
  });
}

/** The SDK's `APIError` subclass of a non-2xx reply (the body's `error` as its message when JSON). */
function errorOf(status: number, text: string, headers: Headers): unknown {
  const json = safeJson(text);
  return OpenAI.APIError.generate(status, json, json === undefined ? text : undefined, headers);
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
