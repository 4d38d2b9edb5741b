import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../test/support/chromium.ts';
import { measureReportOpen } from '../test/support/open-timing.ts';
import { largeRunJsonl, longEpisode, writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { serveRun } from './serve-run.ts';
import { writeHtmlReport } from './write-html-report.ts';

// Load test: 10,000 episodes plus one 2,000-message trace, in real headless Chromium. Open times are
// logged (and reported by `pnpm bench:viewer`), never asserted.
const missing = chromiumMissing();
if (missing) console.warn(`[viewer-load.integration.test] skipped: ${missing}`);

describe.skipIf(missing !== null)(
  `troupe view with 10,000 episodes and a 2,000-message trace${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let dir: string;
    let runDir: string;
    let browser: Awaited<ReturnType<typeof launchChromium>>;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'troupe-view-load-'));
      runDir = await writeFixtureRun({
        dir: join(dir, 'run'),
        jsonl: largeRunJsonl({ count: 9_999, extra: [longEpisode({ messages: 2_000 })] }),
      });
      browser = await launchChromium();
    }, 300_000);

    afterAll(async () => {
      await browser?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('opens the static report and the long trace, rendering only what is on screen', { timeout: 300_000 }, async () => {
      const outFile = join(dir, 'report.html');
      const writeStarted = performance.now();
      await writeHtmlReport({ runDir, outFile });
      const writeMs = performance.now() - writeStarted;
      const timing = await measureReportOpen({
        context: browser.context,
        url: pathToFileURL(outFile).href,
        episodeId: 'long-trace',
        lastNodeId: 1_999,
      });
      console.log(
        `[viewer-load] static report (${((await stat(outFile)).size / 1e6).toFixed(1)} MB, written in ${writeMs.toFixed(0)} ms): ${JSON.stringify(timing)}`,
      );
      expect(timing.renderedMessages).toBeGreaterThan(0);
      expect(timing.renderedMessages).toBeLessThan(300);
      expect(timing.lastNodeRendered).toBe(true);
    });

    it('opens the served run, fetching the long trace on demand', { timeout: 300_000 }, async () => {
      const served = await serveRun({ runDir });
      try {
        const timing = await measureReportOpen({
          context: browser.context,
          url: served.url,
          episodeId: 'long-trace',
          lastNodeId: 1_999,
        });
        console.log(`[viewer-load] served: ${JSON.stringify(timing)}`);
        expect(timing.renderedMessages).toBeLessThan(300);
        expect(timing.lastNodeRendered).toBe(true);
      } finally {
        await served.close();
      }
    });
  },
);
