// troupe view: the page's front end, bundled by esbuild into one inlined script (no dependencies,
// no network). Data comes from <script type="application/json"> elements: a run page has
// `troupe-index` (summary + one row per episode) and `troupe-mode` (where its episodes come from);
// a folder's page has `troupe-runs`; a comparison of two runs `troupe-compare`.
import { comparePage } from './compare-page.ts';
import { readJsonScript } from './dom.ts';
import { runPage } from './run-page.ts';
import { runsPage } from './runs-page.ts';
import type { ComparePageData, EpisodeMode, PageTimings, RunsPageData, ViewerIndex } from './types.ts';

const t0 = performance.now();
const timings: PageTimings = { indexParseMs: 0, firstRenderMs: 0, episodeMs: 0 };
window.__troupe = { timings };
const app = document.getElementById('app')!;

if (document.getElementById('troupe-runs')) {
  runsPage({ app, data: readJsonScript<RunsPageData>('troupe-runs') });
} else if (document.getElementById('troupe-compare')) {
  const data = readJsonScript<ComparePageData>('troupe-compare');
  timings.indexParseMs = performance.now() - t0;
  comparePage({ app, data, timings });
} else {
  const index = readJsonScript<ViewerIndex>('troupe-index');
  const mode = readJsonScript<EpisodeMode & { runs?: string }>('troupe-mode');
  timings.indexParseMs = performance.now() - t0;
  runPage({ app, index, mode, timings });
}
timings.firstRenderMs = performance.now() - t0;
performance.mark('troupe:ready');
document.body.dataset.ready = '1';
