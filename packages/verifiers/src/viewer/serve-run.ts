import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { renderRunHtml } from './render-run-html.ts';
import { loadViewerRun, type ViewerRun } from './run-directory.ts';
import { buildRunIndex, type ViewerIndex } from './run-index.ts';

const LOOPBACK_HOSTS = ['127.0.0.1', '::1', 'localhost'] as const;

export const ServeRunOptionsSchema = z.object({
  /** The run directory (holds traces.jsonl). */
  runDir: z.string().min(1, 'runDir must not be empty'),
  /** TCP port; 0 (default) picks a free one. */
  port: z.number().int().min(0).max(65535).default(0),
  /** Loopback address to bind: 127.0.0.1 (default), ::1 or localhost. Nothing else is accepted. */
  host: z.enum(LOOPBACK_HOSTS, { message: 'host must be a loopback address: 127.0.0.1, ::1 or localhost' }).default('127.0.0.1'),
  /** Called with each problem met while reading the run (a torn last line, an invalid line). */
  onWarning: z
    .custom<(message: string) => void>((v) => v === undefined || typeof v === 'function', 'onWarning must be a function')
    .optional(),
});
export type ServeRunOptions = z.input<typeof ServeRunOptionsSchema>;

/** A running viewer server. */
export interface ServedRun {
  /** The page's URL, e.g. `http://127.0.0.1:41234/`. */
  url: string;
  /** Stops the server (open connections are closed). */
  close: () => Promise<void>;
}

interface Loaded {
  run: ViewerRun;
  index: ViewerIndex;
  byId: Map<string, number>;
  /** traces.jsonl size and mtime when it was read; a change triggers a reload. */
  stamp: string;
  /** The rendered page and index JSON, built on first request. */
  page?: string;
  indexJson?: string;
}

/**
 * Serves a run on loopback: `/` is the page (with the run index embedded), `/api/index.json` the
 * index, `/api/episodes/<id>` one episode record, read on demand. traces.jsonl is re-read when
 * it changes, so a run still being written can be watched by reloading the page. Requests whose
 * Host header is not a loopback name are refused (DNS-rebinding protection).
 */
export async function serveRun(options: ServeRunOptions): Promise<ServedRun> {
  const { runDir, port, host, onWarning } = ServeRunOptionsSchema.parse(options);
  const dir = resolve(runDir);
  const tracesFile = join(dir, 'traces.jsonl');

  const stampOf = async () => {
    const s = await stat(tracesFile);
    return `${s.size}:${s.mtimeMs}`;
  };
  const read = async (): Promise<Loaded> => {
    const stamp = await stampOf();
    const run = await loadViewerRun({ runDir: dir });
    for (const warning of run.warnings) onWarning?.(warning);
    const byId = new Map<string, number>();
    for (const [i, e] of run.episodes.entries()) byId.set(e.record.id, i);
    return { run, index: buildRunIndex(run), byId, stamp };
  };
  let loaded = await read();
  let reloading: Promise<Loaded> | null = null;
  const current = async (): Promise<Loaded> => {
    let stamp: string;
    try {
      stamp = await stampOf();
    } catch {
      return loaded;
    }
    if (stamp === loaded.stamp) return loaded;
    reloading ??= read().finally(() => {
      reloading = null;
    });
    loaded = await reloading;
    return loaded;
  };

  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const hostHeader = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    if (!(LOOPBACK_HOSTS as readonly string[]).includes(hostHeader)) {
      send(res, 403, 'text/plain; charset=utf-8', 'troupe view answers loopback hosts only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    const path = new URL(req.url ?? '/', 'http://loopback').pathname;
    if (path === '/' || path === '/index.html') {
      const loaded = await current();
      loaded.page ??= renderRunHtml(loaded.run, { embedEpisodes: false, index: loaded.index });
      send(res, 200, 'text/html; charset=utf-8', loaded.page);
      return;
    }
    if (path === '/api/index.json') {
      const loaded = await current();
      loaded.indexJson ??= JSON.stringify(loaded.index);
      send(res, 200, 'application/json; charset=utf-8', loaded.indexJson);
      return;
    }
    if (path.startsWith('/api/episodes/')) {
      const { run, byId } = await current();
      const id = decodeURIComponent(path.slice('/api/episodes/'.length));
      const i = byId.get(id);
      if (i === undefined) {
        send(res, 404, 'application/json; charset=utf-8', JSON.stringify({ error: `no episode ${id} in this run` }));
        return;
      }
      send(res, 200, 'application/json; charset=utf-8', run.episodes[i]!.json);
      return;
    }
    send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', `troupe view: ${(error as Error).message}\n`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
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
