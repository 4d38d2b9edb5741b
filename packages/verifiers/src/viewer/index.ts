// The trace viewer and run report: `troupe view <run-dir>` serves a run on loopback, `--html`
// writes the same page as one self-contained file.

export { type RenderRunHtmlOptions, renderRunHtml } from './render-run-html.ts';
export {
  type LoadViewerRunOptions,
  loadViewerRun,
  parseTracesJsonl,
  type ViewerEpisode,
  type ViewerRun,
} from './run-directory.ts';
export { buildRunIndex, type EpisodeRow, type ViewerIndex, ViewerIndexSchema, type ViewerRoleSummary } from './run-index.ts';
export { type ServedRun, type ServeRunOptions, serveRun } from './serve-run.ts';
export { type WriteHtmlReportOptions, writeHtmlReport } from './write-html-report.ts';
