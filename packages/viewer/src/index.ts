// @troupe/viewer: the trace viewer and run report. `troupe view <run-dir>` serves a run on
// loopback, `--html` writes the same page as one self-contained file; `troupe view <folder>` lists
// a folder's runs and compares two of them. The public names, by area (each reviewed:
// tooling/exports-snapshot.json).

// Serving on loopback: one run, or every run below a folder.
export type { ServedRun } from './loopback-server.ts';
export { type ServeRunOptions, serveRun } from './serve-run.ts';
export { type ServeRunFolderOptions, serveRunFolder } from './serve-run-folder.ts';

// Self-contained HTML files: a run's report, or two runs compared.
export { type WriteHtmlReportOptions, writeHtmlReport } from './write-html-report.ts';
export { type WriteCompareReportOptions, writeCompareReport } from './write-compare-report.ts';
export { type RenderRunHtmlOptions, renderRunHtml } from './render-run-html.ts';
export { type RenderCompareHtmlOptions, renderCompareHtml } from './render-compare-html.ts';

// Reading run directories: a run's episodes, config and summary (never following a link out of
// it), and the runs below a folder.
export { type LoadViewerRunOptions, loadViewerRun, type ViewerEpisode, type ViewerRun } from './run-directory.ts';
export { type FindRunsOptions, findRuns, type RunListEntry } from './run-folder.ts';

// The `troupe view` command (the `troupe-viewer` bin runs it).
export { VIEW_HELP, viewCommand } from './view-command.ts';
