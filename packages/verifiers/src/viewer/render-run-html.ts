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

export interface RenderRunHtmlOptions {
  /**
   * Embed every episode's record in the page (default true, gzip-compressed in chunks): the page is
   * then complete and works offline. When false, the page fetches `api/episodes/<id>` from the server that served it.
   */
  embedEpisodes?: boolean;
  /** A precomputed index of the run (saves recomputing it per request). */
  index?: ViewerIndex;
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

/**
 * Renders a run as one self-contained HTML page: summary, episode table and episode view, with all
 * JavaScript, CSS and data inlined. A Content-Security-Policy forbids any network access from the
 * page (except fetching episodes from the serving origin when they are not embedded).
 */
export function renderRunHtml(run: ViewerRun, options: RenderRunHtmlOptions = {}): string {
  const embed = options.embedEpisodes ?? true;
  const index = options.index ?? buildRunIndex(run);
  const { script, styles } = clientAssets();
  const packed = embed ? packEpisodes(run.episodes.map((e) => e.json)) : null;
  const csp = [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    'img-src data:',
    embed ? "connect-src 'none'" : "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  const parts: string[] = [
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">\n`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
    '<meta name="generator" content="troupe view">\n',
    `<title>${escapeHtml(run.name)} · troupe</title>\n`,
    `<style>\n${styles}\n</style>\n</head>\n<body>\n<div id="app"></div>\n`,
    `<script type="application/json" id="troupe-mode">${scriptJson(JSON.stringify(embed ? { episodes: 'embedded', encoding: 'gzip-base64-jsonl', chunks: packed!.counts } : { episodes: 'fetch' }))}</script>\n`,
    `<script type="application/json" id="troupe-index">${scriptJson(JSON.stringify(index))}</script>\n`,
    `<script>\n${script}\n</script>\n`,
  ];
  // Base64 has no `<`, so a chunk cannot end its element early.
  for (const [k, chunk] of (packed?.chunks ?? []).entries())
    parts.push(`<script type="text/plain" id="chunk-${k}">${chunk}</script>\n`);
  parts.push('</body>\n</html>\n');
  return parts.join('');
}
