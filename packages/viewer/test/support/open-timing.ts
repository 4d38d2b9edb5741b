import type { BrowserContext } from 'playwright-core';

/** How long a report page takes to open in a browser, in milliseconds. */
export interface OpenTiming {
  /** From navigation start to the summary and episode table rendered and interactive (in-page clock). */
  tableReadyMs: number;
  /** The same, measured from outside the page (page.goto called → ready marker seen). */
  tableReadyWallMs: number;
  /** From navigation start to DOMContentLoaded (the whole HTML, all embedded episodes, parsed). */
  domContentLoadedMs: number;
  /** Parsing the embedded run index (in-page). */
  indexParseMs: number;
  /** The page's script from start to the table rendered (in-page, includes indexParseMs). */
  appMs: number;
  /** From clicking through to the episode (hash change) to its columns rendered, on an open page. */
  episodeOpenMs: number;
  /** Opening the page directly on the episode's URL fragment until its columns are rendered. */
  episodeColdOpenMs: number;
  /** Message elements in the DOM after opening the episode (virtualised: far fewer than messages). */
  renderedMessages: number;
  /** The episode's last node is rendered after scrolling its column to the bottom. */
  lastNodeRendered: boolean;
}

/**
 * Opens a report page (file:// or served) in `context` and measures the open times of the table
 * and of one (large) episode. Test and benchmark support; it asserts nothing.
 */
export async function measureReportOpen(options: {
  context: BrowserContext;
  url: string;
  episodeId: string;
  lastNodeId: number;
}): Promise<OpenTiming> {
  const { context, url, episodeId } = options;
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector('body[data-ready]', { timeout: 120_000 });
  const tableReadyWallMs = performance.now() - started;
  await page.waitForSelector('.tbody .trow');
  // Browser-side code is passed as strings: this package is type-checked without the DOM library.
  const { indexParseMs, firstRenderMs: appMs } = (await page.evaluate('window.__troupe.timings')) as {
    indexParseMs: number;
    firstRenderMs: number;
  };
  await page.waitForLoadState('domcontentloaded', { timeout: 120_000 });
  const nav = (await page.evaluate(`(() => {
    const entry = performance.getEntriesByType('navigation')[0];
    const mark = performance.getEntriesByName('troupe:ready')[0];
    return { dcl: entry ? entry.domContentLoadedEventEnd : NaN, ready: mark ? mark.startTime : NaN };
  })()`)) as { dcl: number; ready: number };

  await page.evaluate(`location.hash = ${JSON.stringify(`episode=${encodeURIComponent(episodeId)}`)}`);
  await page.waitForSelector(`body[data-episode="${episodeId}"]`, { timeout: 120_000 });
  const episodeOpenMs = (await page.evaluate('window.__troupe.timings.episodeMs')) as number;
  const renderedMessages = await page.locator('.msg').count();
  const lastNodeRendered = (await page.evaluate(`(async () => {
    const scroller = document.querySelector('.trace-scroll');
    if (!scroller) return false;
    for (let i = 0; i < 6; i++) {
      scroller.scrollTop = scroller.scrollHeight;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      if (document.querySelector('.msg[data-node="${options.lastNodeId}"]')) return true;
    }
    return false;
  })()`)) as boolean;
  await page.close();

  const cold = await context.newPage();
  const coldStarted = performance.now();
  await cold.goto(`${url}#episode=${encodeURIComponent(episodeId)}`, { waitUntil: 'commit' });
  await cold.waitForSelector(`body[data-episode="${episodeId}"]`, { timeout: 120_000 });
  const episodeColdOpenMs = performance.now() - coldStarted;
  await cold.close();

  return {
    tableReadyMs: nav.ready,
    tableReadyWallMs,
    domContentLoadedMs: nav.dcl,
    indexParseMs,
    appMs,
    episodeOpenMs,
    episodeColdOpenMs,
    renderedMessages,
    lastNodeRendered,
  };
}
