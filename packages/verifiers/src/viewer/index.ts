// The trace viewer and run report: `troupe view <run-dir>` serves a run on loopback, `--html`
// writes the same page as one self-contained file; `troupe view <folder>` lists a folder's runs and
// compares two of them.

export {
  type ComparePageData,
  type CompareSide,
  type RenderCompareHtmlOptions,
  renderCompareHtml,
} from './render-compare-html.ts';
export { type RenderRunHtmlOptions, renderRunHtml } from './render-run-html.ts';
export { type RunsPageData, renderRunsHtml } from './render-runs-html.ts';
export {
  type LoadViewerRunOptions,
  loadViewerRun,
  parseTracesJsonl,
  type ViewerEpisode,
  type ViewerRun,
} from './run-directory.ts';
export { type FindRunsOptions, type FoundRun, findRuns, type RunListEntry } from './run-folder.ts';
export { buildRunIndex, type EpisodeRow, type ViewerIndex, ViewerIndexSchema, type ViewerRoleSummary } from './run-index.ts';
export { type ServedRun, type ServeRunOptions, serveRun } from './serve-run.ts';
export { runHref, type ServeRunFolderOptions, serveRunFolder } from './serve-run-folder.ts';
export { type WriteCompareReportOptions, writeCompareReport } from './write-compare-report.ts';
export { type WriteHtmlReportOptions, writeHtmlReport } from './write-html-report.ts';
