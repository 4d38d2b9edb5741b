import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { HTML, JSON_TYPE, LoopbackHostSchema, type ServedRun, send, startLoopbackServer, TEXT } from './loopback-server.ts';
import { renderRunHtml } from './render-run-html.ts';
import { RunCache } from './run-cache.ts';

export type { ServedRun } from './loopback-server.ts';

export const ServeRunOptionsSchema = z.object({
  /** The run directory (holds traces.jsonl). */
  runDir: z.string().min(1, 'runDir must not be empty'),
  /** TCP port; 0 (default) picks a free one. */
  port: z.number().int().min(0).max(65535).default(0),
  /** Loopback address to bind: 127.0.0.1 (default), ::1 or localhost. Nothing else is accepted. */
  host: LoopbackHostSchema,
  /** Called with each problem met while reading the run (a torn last line, an invalid line). */
  onWarning: z
    .custom<(message: string) => void>((v) => v === undefined || typeof v === 'function', 'onWarning must be a function')
    .optional(),
});
/** What {@link serveRun} takes, as given; see {@link ServeRunOptionsSchema}, which throws naming a bad field. */
export type ServeRunOptions = z.input<typeof ServeRunOptionsSchema>;

/**
 * Answers a run's routes below its base: `` (the page), `api/index.json`, `api/episodes/<id>`.
 * Returns false when `path` is none of them. `runsHref` links the page to a list of runs.
 */
export async function serveRunRoutes(options: {
  cache: RunCache;
  path: string;
  res: ServerResponse;
  runsHref?: string;
}): Promise<boolean> {
  const { cache, path, res } = options;
  if (path === '' || path === 'index.html') {
    const page = await cache.built('page', (loaded) =>
      renderRunHtml(loaded.run, {
        embedEpisodes: false,
        index: loaded.index,
        ...(options.runsHref ? { runsHref: options.runsHref } : {}),
      }),
    );
    send(res, 200, HTML, page);
    return true;
  }
  if (path === 'api/index.json') {
    send(res, 200, JSON_TYPE, await cache.built('index', (loaded) => JSON.stringify(loaded.index)));
    return true;
  }
  if (path.startsWith('api/episodes/')) {
    const { run, byId } = await cache.current();
    const id = decodeURIComponent(path.slice('api/episodes/'.length));
    const i = byId.get(id);
    if (i === undefined) send(res, 404, JSON_TYPE, JSON.stringify({ error: `no episode ${id} in this run` }));
    else send(res, 200, JSON_TYPE, run.episodes[i]!.json);
    return true;
  }
  return false;
}

/**
 * Serves a run on loopback: `/` is the page (with the run index embedded), `/api/index.json` the
 * index, `/api/episodes/<id>` one episode record, read on demand. traces.jsonl is re-read when
 * it changes, so a run still being written can be watched by reloading the page. Requests whose
 * Host header is not a loopback name are refused (DNS-rebinding protection).
 */
export async function serveRun(options: ServeRunOptions): Promise<ServedRun> {
  const { runDir, port, host, onWarning } = ServeRunOptionsSchema.parse(options);
  const cache = new RunCache({ runDir, onWarning });
  await cache.current();
  return startLoopbackServer({
    port,
    host,
    handle: async (url, res) => {
      if (!(await serveRunRoutes({ cache, path: url.pathname.slice(1), res }))) send(res, 404, TEXT, 'not found\n');
    },
  });
}
