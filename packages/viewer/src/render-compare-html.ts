import { episodeParts, renderPage } from './render-run-html.ts';
import type { ViewerRun } from './run-directory.ts';
import { buildRunIndex, type ViewerIndex } from './run-index.ts';

/** One side of a comparison page (`troupe-compare`). */
export interface CompareSide {
  name: string;
  index: ViewerIndex;
  /** Where the side's episodes come from (embedded chunks with a prefix, or `<base>api/episodes/<id>`). */
  mode: Record<string, unknown>;
  /** The run's own page, when served. */
  href?: string;
}

/** The data of a comparison page. */
export interface ComparePageData {
  a: CompareSide;
  b: CompareSide;
  /** The list of runs, when served from a folder. */
  runsHref?: string;
}

/**
 * How {@link renderCompareHtml} builds the A/B page: whether to embed both runs' episodes,
 * precomputed indexes, and the URLs it links to when served.
 */
export interface RenderCompareHtmlOptions {
  /** Embed both runs' episodes (default true: a static page that opens offline). */
  embedEpisodes?: boolean;
  /** Precomputed indexes of the two runs. */
  indexes?: [ViewerIndex, ViewerIndex];
  /** When served: each run's base URL (relative to the page) for its page and its episodes. */
  bases?: [string, string];
  /** The URL of the list of runs, when served from a folder (adds a link back to it). */
  runsHref?: string;
}

/**
 * Renders two runs side by side as one self-contained page: per-role rewards, pass@k, tokens and
 * cost of each with the difference, and the same task's episodes next to each other.
 */
export function renderCompareHtml(runs: [ViewerRun, ViewerRun], options: RenderCompareHtmlOptions = {}): string {
  const embed = options.embedEpisodes ?? true;
  const chunks: Record<string, string> = {};
  const side = (run: ViewerRun, k: 0 | 1): CompareSide => {
    const index = options.indexes?.[k] ?? buildRunIndex(run);
    const parts = episodeParts(run, { embed, prefix: k === 0 ? 'a-' : 'b-' });
    Object.assign(chunks, parts.chunks);
    const base = options.bases?.[k];
    if (!embed && base !== undefined) parts.mode.base = base;
    return { name: run.name, index, mode: parts.mode, ...(base !== undefined ? { href: base } : {}) };
  };
  const data: ComparePageData = {
    a: side(runs[0], 0),
    b: side(runs[1], 1),
    ...(options.runsHref ? { runsHref: options.runsHref } : {}),
  };
  return renderPage({
    title: `${runs[0].name} vs ${runs[1].name}`,
    json: { 'troupe-compare': data },
    text: chunks,
    fetches: !embed,
  });
}
