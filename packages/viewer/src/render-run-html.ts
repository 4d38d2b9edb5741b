import { gzipSync } from 'node:zlib';
import { clientAssets } from './client-assets.ts';
import type { ViewerRun } from './run-directory.ts';
import { buildRunIndex, type ViewerIndex } from './run-index.ts';

/** Episodes are embedded in chunks of at most this many episodes or (about) this many bytes of JSON. */
const CHUNK_EPISODES = 64;
const CHUNK_BYTES = 512 * 1024;

/**
 * Packs episode JSON lines into gzip + base64 chunks (consecutive episodes, in file order). The page
 * inflates a chunk with the browser's DecompressionStream only when one of its episodes is opened,
 * so a 10,000-episode report stays small and parses fast.
 */
export function packEpisodes(jsons: string[]): { chunks: string[]; counts: number[] } {
  const chunks: string[] = [];
  const counts: number[] = [];
  let current: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (current.length === 0) return;
    chunks.push(gzipSync(current.join('\n')).toString('base64'));
    counts.push(current.length);
    current = [];
    bytes = 0;
  };
  for (const json of jsons) {
    if (current.length && (current.length >= CHUNK_EPISODES || bytes + json.length > CHUNK_BYTES)) flush();
    current.push(json);
    bytes += json.length;
  }
  flush();
  return { chunks, counts };
}

/**
 * How {@link renderRunHtml} builds a run's page: whether to embed the episodes, a precomputed index,
 * and the links it shows when served.
 */
export interface RenderRunHtmlOptions {
  /**
   * Embed every episode's record in the page (default true, gzip-compressed in chunks): the page is
   * then complete and works offline. When false, the page fetches `api/episodes/<id>` from the server that served it.
   */
  embedEpisodes?: boolean;
  /** A precomputed index of the run (saves recomputing it per request). */
  index?: ViewerIndex;
  /** A link from the page to the list of runs it belongs to (a served folder of runs). */
  runsHref?: string;
}

/**
 * JSON made safe inside a `<script type="application/json">` element: every `<` becomes `\\u003c`
 * (still the same JSON), so no `</script>` or `<!--` can end or confuse the element.
 */
export function scriptJson(json: string): string {
  return json.includes('<') ? json.replace(/</g, '\\u003c') : json;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** What a page of the viewer holds besides its script and styles. */
export interface PageParts {
  title: string;
  /** `<script type="application/json">` elements by id. */
  json: Record<string, unknown>;
  /** `<script type="text/plain">` elements (embedded episode chunks) by id. */
  text?: Record<string, string>;
  /** The page fetches from the origin that served it. */
  fetches: boolean;
}

/**
 * Renders one self-contained page of the viewer with all JavaScript, CSS and data inlined. A
 * Content-Security-Policy forbids any network access from the page (except fetching from the
 * serving origin when `fetches`).
 */
export function renderPage(parts: PageParts): string {
  const { script, styles } = clientAssets();
  const csp = [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    'img-src data:',
    parts.fetches ? "connect-src 'self'" : "connect-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  const out: string[] = [
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">\n`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
    '<meta name="generator" content="troupe view">\n',
    `<title>${escapeHtml(parts.title)} · troupe</title>\n`,
    `<style>\n${styles}\n</style>\n</head>\n<body>\n<div id="app"></div>\n`,
  ];
  for (const [id, value] of Object.entries(parts.json))
    out.push(`<script type="application/json" id="${id}">${scriptJson(JSON.stringify(value))}</script>\n`);
  out.push(`<script>\n${script}\n</script>\n`);
  // Base64 has no `<`, so a chunk cannot end its element early.
  for (const [id, text] of Object.entries(parts.text ?? {})) out.push(`<script type="text/plain" id="${id}">${text}</script>\n`);
  out.push('</body>\n</html>\n');
  return out.join('');
}

/** The mode element and chunk elements of embedded (or fetched) episodes; chunk ids start with `prefix`. */
export function episodeParts(
  run: ViewerRun,
  options: { embed: boolean; prefix?: string },
): { mode: Record<string, unknown>; chunks: Record<string, string> } {
  if (!options.embed) return { mode: { episodes: 'fetch' }, chunks: {} };
  const packed = packEpisodes(run.episodes.map((e) => e.json));
  const chunks: Record<string, string> = {};
  for (const [k, chunk] of packed.chunks.entries()) chunks[`${options.prefix ?? ''}chunk-${k}`] = chunk;
  const mode: Record<string, unknown> = { episodes: 'embedded', encoding: 'gzip-base64-jsonl', chunks: packed.counts };
  if (options.prefix) mode.chunkPrefix = options.prefix;
  return { mode, chunks };
}

/**
 * Renders a run as one self-contained HTML page: summary, episode table and episode view, with all
 * JavaScript, CSS and data inlined. A Content-Security-Policy forbids any network access from the
 * page (except fetching episodes from the serving origin when they are not embedded).
 */
export function renderRunHtml(run: ViewerRun, options: RenderRunHtmlOptions = {}): string {
  const embed = options.embedEpisodes ?? true;
  const index = options.index ?? buildRunIndex(run);
  const { mode, chunks } = episodeParts(run, { embed });
  if (options.runsHref) mode.runs = options.runsHref;
  return renderPage({ title: run.name, json: { 'troupe-mode': mode, 'troupe-index': index }, text: chunks, fetches: !embed });
}
