// troupe view: the page's front end, bundled by esbuild into one inlined script (no dependencies,
// no network). Data comes from <script type="application/json"> elements: `troupe-index`
// (summary + one row per episode) and `troupe-mode` (where the episodes come from).
import { readJsonScript } from './dom.ts';
import { runPage } from './run-page.ts';
import type { EpisodeMode, PageTimings, ViewerIndex } from './types.ts';

const t0 = performance.now();
const timings: PageTimings = { indexParseMs: 0, firstRenderMs: 0, episodeMs: 0 };
window.__troupe = { timings };
const app = document.getElementById('app')!;

const index = readJsonScript<ViewerIndex>('troupe-index');
const mode = readJsonScript<EpisodeMode & { runs?: string }>('troupe-mode');
timings.indexParseMs = performance.now() - t0;
runPage({ app, index, mode, timings });
timings.firstRenderMs = performance.now() - t0;
performance.mark('troupe:ready');
document.body.dataset.ready = '1';
