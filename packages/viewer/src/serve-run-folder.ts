import type { ServerResponse } from 'node:http';
import { basename, resolve } from 'node:path';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import { HTML, JSON_TYPE, LoopbackHostSchema, type ServedRun, send, startLoopbackServer, TEXT } from './loopback-server.ts';
import { renderCompareHtml } from './render-compare-html.ts';
import { renderRunsHtml } from './render-runs-html.ts';
import { RunCache } from './run-cache.ts';
import { type FoundRun, findRuns, type RunListEntry, runListEntry, unreadableRunEntry } from './run-folder.ts';
import { serveRunRoutes } from './serve-run.ts';

export const ServeRunFolderOptionsSchema = z.object({
  /** A folder of run directories (e.g. `outputs/`). */
  folder: z.string().min(1, 'folder must not be empty'),
  /** TCP port; 0 (default) picks a free one. */
  port: z.number().int().min(0).max(65535).default(0),
  /** Loopback address to bind: 127.0.0.1 (default), ::1 or localhost. Nothing else is accepted. */
  host: LoopbackHostSchema,
  /** Called with each problem met while reading a run. */
  onWarning: z
    .custom<(message: string) => void>((v) => v === undefined || typeof v === 'function', 'onWarning must be a function')
    .optional(),
});
/**
 * What {@link serveRunFolder} takes, as given; see {@link ServeRunFolderOptionsSchema}, which throws
 * naming a bad field.
 */
export type ServeRunFolderOptions = z.input<typeof ServeRunFolderOptionsSchema>;

/** The URL path (relative to the folder's root page) of a run's page. */
export function runHref(name: string): string {
  return `runs/${encodeURIComponent(name)}/`;
}

/**
 * Serves a folder of runs on loopback: `/` lists the runs (newest first) with a picker to compare
 * two; `/runs/<name>/` is a run's page (as `serveRun` serves it); `/compare?a=<name>&b=<name>`
 * shows two runs side by side; `/api/runs.json` is the list. Runs are read on first use and
 * re-read when their traces.jsonl changes; new run directories appear on reload.
 */
export async function serveRunFolder(options: ServeRunFolderOptions): Promise<ServedRun> {
  const { folder, port, host, onWarning } = ServeRunFolderOptionsSchema.parse(options);
  const root = resolve(folder);
  const runs = new FolderRuns(root, onWarning);
  if ((await runs.scan()).length === 0)
    throw new ConfigError(`folder: ${root} holds no run directory (no traces.jsonl in it or below it)`);
  return startLoopbackServer({
    port,
    host,
    handle: async (url, res) => {
      const path = url.pathname;
      if (path === '/' || path === '/index.html')
        send(res, 200, HTML, renderRunsHtml({ folder: basename(root), runs: await runs.list() }));
      else if (path === '/api/runs.json') send(res, 200, JSON_TYPE, JSON.stringify(await runs.list()));
      else if (path === '/compare') await serveCompare(runs, url, res);
      else if (!(await serveRunRoute(runs, path, res))) send(res, 404, TEXT, 'not found\n');
    },
  });
}

interface FolderRun {
  found: FoundRun;
  cache: RunCache;
}

/** The runs below a folder, each with its cache; re-scanned on every listing and on an unknown name. */
class FolderRuns {
  readonly #root: string;
  readonly #onWarning: ((message: string) => void) | undefined;
  readonly #runs = new Map<string, FolderRun>();

  constructor(root: string, onWarning: ((message: string) => void) | undefined) {
    this.#root = root;
    this.#onWarning = onWarning;
  }

  async scan(): Promise<FoundRun[]> {
    const found = await findRuns({ folder: this.#root });
    for (const run of found) {
      const known = this.#runs.get(run.name);
      if (known) known.found = run;
      else this.#runs.set(run.name, { found: run, cache: new RunCache({ runDir: run.runDir, onWarning: this.#onWarning }) });
    }
    return found;
  }

  async lookup(name: string): Promise<FolderRun | undefined> {
    return this.#runs.get(name) ?? ((await this.scan()) && this.#runs.get(name));
  }

  /** Every run's list entry (an unreadable run is listed with its error). */
  async list(): Promise<RunListEntry[]> {
    const entries: RunListEntry[] = [];
    for (const found of await this.scan()) {
      const { cache } = this.#runs.get(found.name)!;
      try {
        entries.push(runListEntry(found, (await cache.current()).index));
      } catch (error) {
        entries.push(unreadableRunEntry(found, error));
      }
    }
    return entries;
  }
}

/** `/compare?a=<name>&b=<name>`: the two runs side by side (404 naming a missing one). */
async function serveCompare(runs: FolderRuns, url: URL, res: ServerResponse): Promise<void> {
  const names = [url.searchParams.get('a'), url.searchParams.get('b')];
  const sides = await Promise.all(names.map((name) => (name === null ? undefined : runs.lookup(name))));
  const [a, b] = sides;
  if (!a || !b) {
    const missing = names.filter((name, k) => name === null || !sides[k]).map((name) => JSON.stringify(name ?? ''));
    send(res, 404, TEXT, `compare?a=<run>&b=<run>: no run ${missing.join(' or ')} in this folder\n`);
    return;
  }
  const [loadedA, loadedB] = [await a.cache.current(), await b.cache.current()];
  const page = renderCompareHtml([loadedA.run, loadedB.run], {
    embedEpisodes: false,
    indexes: [loadedA.index, loadedB.index],
    bases: [runHref(a.found.name), runHref(b.found.name)],
    runsHref: './',
  });
  send(res, 200, HTML, page);
}

/** `/runs/<name>/...`: false when the path is not a run's route. */
async function serveRunRoute(runs: FolderRuns, path: string, res: ServerResponse): Promise<boolean> {
  const match = /^\/runs\/([^/]+)(\/.*)?$/.exec(path);
  if (!match) return false;
  let name: string;
  try {
    name = decodeURIComponent(match[1]!);
  } catch {
    send(res, 400, TEXT, 'bad run name\n');
    return true;
  }
  const run = await runs.lookup(name);
  if (!run) send(res, 404, TEXT, `no run ${JSON.stringify(name)} in this folder\n`);
  else if (match[2] === undefined) send(res, 301, TEXT, '', { location: `/${runHref(name)}` });
  else return serveRunRoutes({ cache: run.cache, path: match[2].slice(1), res, runsHref: '../../' });
  return true;
}
