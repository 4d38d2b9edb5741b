import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** The addresses a viewer server may bind: loopback only. */
export const LOOPBACK_HOSTS = ['127.0.0.1', '::1', 'localhost'] as const;

export const LoopbackHostSchema = z
  .enum(LOOPBACK_HOSTS, { message: 'host must be a loopback address: 127.0.0.1, ::1 or localhost' })
  .default('127.0.0.1');

/** A running viewer server. */
export interface ServedRun {
  /** The page's URL, e.g. `http://127.0.0.1:41234/`. */
  url: string;
  /** Stops the server (open connections are closed). */
  close: () => Promise<void>;
}

/** Sends a complete, uncached response. */
export function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(body);
}

export const HTML = 'text/html; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
export const TEXT = 'text/plain; charset=utf-8';

/**
 * Serves GET and HEAD requests on a loopback address with `handle(url)`. Requests whose Host
 * header is not a loopback name are refused (DNS-rebinding protection); a malformed URI answers
 * 400; a handler that throws otherwise answers 500 with its message.
 */
export async function startLoopbackServer(options: {
  port: number;
  host: (typeof LOOPBACK_HOSTS)[number];
  handle: (url: URL, res: ServerResponse) => Promise<void>;
}): Promise<ServedRun> {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const hostHeader = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    if (!(LOOPBACK_HOSTS as readonly string[]).includes(hostHeader)) {
      send(res, 403, TEXT, 'troupe view answers loopback hosts only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, TEXT, 'method not allowed\n');
      return;
    }
    await options.handle(new URL(req.url ?? '/', 'http://loopback'), res);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A path that does not decode (`%E0%A4%A`, a lone `%`) is the client's error, wherever it is decoded.
      const malformed = error instanceof URIError || (error as NodeJS.ErrnoException).code === 'ERR_INVALID_URL';
      if (!res.headersSent && malformed) send(res, 400, TEXT, 'troupe view: malformed URI\n');
      else if (!res.headersSent) send(res, 500, TEXT, `troupe view: ${(error as Error).message}\n`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolvePromise();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${urlHost}:${address.port}/`,
    close: () =>
      new Promise<void>((resolvePromise, reject) => {
        server.close((error) => (error ? reject(error) : resolvePromise()));
        server.closeAllConnections();
      }),
  };
}
