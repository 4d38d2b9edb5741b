import { renderPage } from './render-run-html.ts';
import type { RunListEntry } from './run-folder.ts';

/** The data of a runs-list page (`troupe-runs`). */
export interface RunsPageData {
  /** The folder's display name. */
  folder: string;
  runs: RunListEntry[];
}

/**
 * Renders the runs of a folder as one page: a table of runs (envs, models, episodes, per-role
 * reward and pass@1, tokens, cost), each linking to `runs/<name>/`, and a picker of two runs that
 * opens `compare?a=<name>&b=<name>`. Served by `troupe view <folder>`.
 */
export function renderRunsHtml(data: RunsPageData): string {
  return renderPage({ title: data.folder, json: { 'troupe-runs': data }, fetches: true });
}
