// Benchmark: how long a 10,000-episode run with one 2,000-message trace takes to open in headless
// Chromium, against parsing the same traces.jsonl in Node. Run with `pnpm bench:viewer`. Progress
// goes to stderr; the LAST stdout line is one JSON object (name, value, unit, baseline, ratio, ...).
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { largeRunJsonl, longEpisode, writeFixtureRun } from '../src/__fixtures__/fixture-run.ts';
import { serveRun } from '../src/serve-run.ts';
import { writeHtmlReport } from '../src/write-html-report.ts';
import { CHROMIUM_PATH, chromiumMissing, launchChromium } from '../test/support/chromium.ts';
import { measureReportOpen, type OpenTiming } from '../test/support/open-timing.ts';

const EPISODES = 10_000;
const MESSAGES = 2_000;
const REPEATS = 3;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const log = (message: string) => process.stderr.write(`[bench:viewer] ${message}\n`);

const dir = await mkdtemp(join(tmpdir(), 'troupe-bench-viewer-'));
try {
  const runDir = await writeFixtureRun({
    dir: join(dir, 'run'),
    jsonl: largeRunJsonl({ count: EPISODES - 1, extra: [longEpisode({ messages: MESSAGES })] }),
  });
  const tracesFile = join(runDir, 'traces.jsonl');
  const jsonlBytes = (await stat(tracesFile)).size;

  // Baseline: read and parse the same traces.jsonl in Node (JSON.parse per line).
  const baselineRuns: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const started = performance.now();
    const text = await readFile(tracesFile, 'utf8');
    let parsed = 0;
    for (const line of text.split('\n')) {
      if (!line) continue;
      JSON.parse(line);
      parsed++;
    }
    baselineRuns.push(performance.now() - started);
    if (parsed !== EPISODES) throw new Error(`expected ${EPISODES} episodes, parsed ${parsed}`);
  }
  const baseline = median(baselineRuns);
  log(`baseline (Node JSON.parse of ${(jsonlBytes / 1e6).toFixed(1)} MB traces.jsonl): ${baseline.toFixed(0)} ms`);

  const outFile = join(dir, 'report.html');
  const writeStarted = performance.now();
  await writeHtmlReport({ runDir, outFile });
  const writeHtmlMs = performance.now() - writeStarted;
  const htmlBytes = (await stat(outFile)).size;
  log(`writeHtmlReport: ${writeHtmlMs.toFixed(0)} ms, ${(htmlBytes / 1e6).toFixed(1)} MB`);

  const missing = chromiumMissing();
  if (missing) {
    log(`skipped the browser part: ${missing}`);
    console.log(
      JSON.stringify({
        name: 'viewer_open_10k_episodes',
        value: null,
        unit: 'ms',
        baseline,
        ratio: null,
        skipped: missing,
        writeHtmlMs,
        htmlBytes,
        jsonlBytes,
      }),
    );
  } else {
    const browser = await launchChromium();
    const statics: OpenTiming[] = [];
    const serveds: OpenTiming[] = [];
    try {
      for (let i = 0; i < REPEATS; i++) {
        statics.push(
          await measureReportOpen({
            context: browser.context,
            url: pathToFileURL(outFile).href,
            episodeId: 'long-trace',
            lastNodeId: MESSAGES - 1,
          }),
        );
        log(`static report, run ${i + 1}: ${JSON.stringify(statics.at(-1))}`);
      }
      const served = await serveRun({ runDir });
      try {
        for (let i = 0; i < REPEATS; i++) {
          serveds.push(
            await measureReportOpen({
              context: browser.context,
              url: served.url,
              episodeId: 'long-trace',
              lastNodeId: MESSAGES - 1,
            }),
          );
          log(`served, run ${i + 1}: ${JSON.stringify(serveds.at(-1))}`);
        }
      } finally {
        await served.close();
      }
    } finally {
      await browser.close();
    }
    const pick = (list: OpenTiming[], key: keyof OpenTiming) => Number(median(list.map((t) => Number(t[key]))).toFixed(1));
    const value = pick(statics, 'tableReadyMs');
    let chromium = 'unknown';
    try {
      chromium = execFileSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8' }).trim();
    } catch {}
    console.log(
      JSON.stringify({
        name: 'viewer_open_10k_episodes',
        value,
        unit: 'ms',
        baseline: Number(baseline.toFixed(1)),
        ratio: Number((value / baseline).toFixed(3)),
        description:
          'static report: navigation start to summary + episode table rendered (median of 3); baseline: Node reads and JSON.parses the same traces.jsonl',
        episodes: EPISODES,
        longTraceMessages: MESSAGES,
        staticTableReadyMs: value,
        staticDomContentLoadedMs: pick(statics, 'domContentLoadedMs'),
        staticEpisodeOpenMs: pick(statics, 'episodeOpenMs'),
        staticEpisodeColdOpenMs: pick(statics, 'episodeColdOpenMs'),
        servedTableReadyMs: pick(serveds, 'tableReadyMs'),
        servedEpisodeOpenMs: pick(serveds, 'episodeOpenMs'),
        servedEpisodeColdOpenMs: pick(serveds, 'episodeColdOpenMs'),
        renderedMessages: pick(statics, 'renderedMessages'),
        writeHtmlMs: Number(writeHtmlMs.toFixed(0)),
        htmlBytes,
        jsonlBytes,
        chromium,
        cpus: cpus().length,
        loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
      }),
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
