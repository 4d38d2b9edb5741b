// The trace viewer and run report: `troupe view <run-dir>` serves a run on loopback, `--html`
// writes the same page as one self-contained file.
export { type LoadRunOptions, loadRun, parseTracesJsonl, type ViewerEpisode, type ViewerRun } from './run-directory.ts';
export { buildRunIndex, type EpisodeRow, type RoleSummary, type ViewerIndex, ViewerIndexSchema } from './run-index.ts';
export { passAtK } from './pass-at-k.ts';
export { type RenderRunHtmlOptions, renderRunHtml } from './render-run-html.ts';
export { type ServedRun, type ServeRunOptions, serveRun } from './serve-run.ts';
export { type WriteHtmlReportOptions, writeHtmlReport } from './write-html-report.ts';
