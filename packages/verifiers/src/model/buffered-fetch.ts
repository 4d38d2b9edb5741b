import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** Options of `createBufferedFetch`. */
export interface BufferedFetchOptions {
  /** Most sockets per origin (default 256). */
  maxSockets?: number;
}

/**
 * A `fetch` for non-streaming JSON APIs on `node:http` keep-alive agents: the whole reply body
 * is read into one buffer before the `Response` is built. On loopback it costs a fraction of
 * the WHATWG-streams machinery of the built-in fetch, which dominates the latency the
 * interception hop adds. Bodies that are streams (or FormData) fall back to the global fetch.
 * Not for SSE: the reply is delivered only once complete.
 */
export function createBufferedFetch(options: BufferedFetchOptions = {}): typeof fetch {
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 256, scheduling: 'lifo' as const };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent(agentOptions);

  const bufferedFetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const body = init.body;
    if (input instanceof Request || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array))) {
      return fetch(input, init);
    }
    const url = typeof input === 'string' ? new URL(input) : input;
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const headers = requestHeaders(init.headers, body);
    const secure = url.protocol === 'https:';
    return new Promise<Response>((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(url, {
        method: init.method ?? 'GET',
        headers,
        agent: secure ? httpsAgent : httpAgent,
      });
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => {
        fail(abortError(signal));
        req.destroy();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.setNoDelay(true);
      // bare-error: fetch's contract: a transport failure is a TypeError (this file's callers test it)
      req.on('error', (error) => fail(new TypeError('fetch failed', { cause: error })));
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        // bare-error: fetch's contract, as above
        res.on('error', (error) => fail(new TypeError('fetch failed: reply body', { cause: error })));
        // bare-error: fetch's contract, as above
        res.on('aborted', () => fail(new TypeError('fetch failed: reply body cut short')));
        res.on('end', () => {
          if (settled) return;
          // bare-error: fetch's contract, as above
          if (!res.complete) return fail(new TypeError('fetch failed: reply body cut short'));
          settled = true;
          signal?.removeEventListener('abort', onAbort);
          resolve(responseOf(res, chunks));
        });
      });
      req.end(body ?? undefined);
    });
  };
  return bufferedFetch as typeof fetch;
}

/** The request's headers as `node:http` takes them, with the body's `content-length`. */
function requestHeaders(init: RequestInit['headers'], body: string | Uint8Array | null | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  new Headers(init).forEach((value, key) => {
    headers[key] = value;
  });
  if (body != null) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  return headers;
}

/** The `Response` of a complete reply whose body arrived as `chunks` (no body for 204 and 304). */
function responseOf(res: IncomingMessage, chunks: Buffer[]): Response {
  const headers = new Headers();
  for (const [key, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else if (value !== undefined) headers.set(key, value);
  }
  const status = res.statusCode ?? 502;
  const payload = status === 204 || status === 304 ? null : Buffer.concat(chunks);
  return new Response(payload, { status, statusText: res.statusMessage ?? '', headers });
}

function abortError(signal: AbortSignal | undefined): unknown {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const error = new DOMException(reason instanceof Error ? reason.message : 'This operation was aborted', 'AbortError');
  return error;
}
