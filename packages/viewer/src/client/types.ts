// The data the page reads: the run index (built by run-index.ts) and episode records (the trace
// schema). Type-only imports: nothing of the server code is bundled into the page.

export type { EpisodeRecord, Message, MessageNode, ModelCall, ToolCall, TraceError, TraceRecord } from '@troupe/verifiers';
export type { EpisodeRow, ViewerIndex, ViewerRoleSummary } from '../run-index.ts';

/** How a page gets its episodes: embedded gzip + base64 chunks, or fetched from the server. */
export type EpisodeMode =
  | { episodes: 'embedded'; encoding: 'gzip-base64-jsonl'; chunks: number[]; chunkPrefix?: string }
  | { episodes: 'fetch'; base?: string };

/** Timings the page records for tests and `pnpm bench:viewer` (milliseconds). */
export interface PageTimings {
  indexParseMs: number;
  firstRenderMs: number;
  episodeMs: number;
}

declare global {
  interface Window {
    __troupe: { timings: PageTimings };
  }
}

export type { ComparePageData, CompareSide } from '../render-compare-html.ts';
export type { RunsPageData } from '../render-runs-html.ts';
export type { RunListEntry } from '../run-folder.ts';
