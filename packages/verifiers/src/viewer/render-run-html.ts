import { clientAssets } from './client-assets.ts';
import type { ViewerRun } from './run-directory.ts';
import { buildRunIndex, type ViewerIndex } from './run-index.ts';

export interface RenderRunHtmlOptions {
  /**
   * Embed every episode's record in the page (default true): the page is then complete and works
   * offline. When false, the page fetches `api/episodes/<id>` from the server that served it.
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
    `<script type="application/json" id="troupe-mode">${scriptJson(JSON.stringify({ episodes: embed ? 'embedded' : 'fetch' }))}</script>\n`,
    `<script type="application/json" id="troupe-index">${scriptJson(JSON.stringify(index))}</script>\n`,
    `<script>\n${script}\n</script>\n`,
  ];
  if (embed) {
    run.episodes.forEach((episode, i) => {
      parts.push(`<script type="application/json" id="ep-${i}">${scriptJson(episode.json)}</script>\n`);
    });
  }
  parts.push('</body>\n</html>\n');
  return parts.join('');
}
