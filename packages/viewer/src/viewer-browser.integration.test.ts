import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../test/support/chromium.ts';
import { fixtureEpisodes, judgeEpisode, writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { serveRun } from './serve-run.ts';
import { writeHtmlReport } from './write-html-report.ts';

// Real headless Chromium (Debian's /usr/bin/chromium, installed by tooling/scripts/ci-chromium.sh).
const missing = chromiumMissing();
if (missing) console.warn(`[viewer-browser.integration.test] skipped: ${missing}`);
const IMAGES = fileURLToPath(new URL('../../../../docs/images/', import.meta.url));
/** Named like a `troupe eval` output directory (it shows in the page's top bar). */
const RUN_NAME = 'agentic-judge--qwen3-4b--bash--3f9c2a1d';

describe.skipIf(missing !== null)(`troupe view in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let dir: string;
  let reportUrl: string;
  let browser: { context: BrowserContext; close: () => Promise<void> };
  const pageErrors: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-view-browser-'));
    const runDir = await writeFixtureRun({ dir: join(dir, RUN_NAME), episodes: fixtureEpisodes(), tornTail: true });
    const outFile = join(dir, 'report.html');
    await writeHtmlReport({ runDir, outFile });
    reportUrl = pathToFileURL(outFile).href;
    browser = await launchChromium({ width: 1440, height: 900 });
  });

  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function open(url: string): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(url);
    await page.waitForSelector('body[data-ready]');
    return page;
  }

  const countText = (page: Page) => page.locator('.table-count').textContent();

  it('shows the run summary: roles with reward histograms, pass@k, errors by type, stop conditions, warnings', async () => {
    const page = await open(reportUrl);
    expect(await page.locator('.role-card h3').allTextContents()).toEqual(['solver', 'judge', 'proposer', 'player0', 'player1']);
    expect(await page.locator('.role-card[data-role="solver"] svg.hist rect').count()).toBe(12);
    expect(await page.locator('.role-card[data-role="judge"]').textContent()).toContain('not scored: no rewards recorded');
    expect(await page.locator('.role-card[data-role="solver"] .chips').first().textContent()).toMatch(/pass@k@1 \d/);
    expect(await page.locator('.errors-card tbody tr').count()).toBe(4);
    expect(await page.locator('.errors-card').textContent()).toContain('SandboxError');
    expect(await page.locator('.warnings').textContent()).toMatch(/torn last line/);
    expect(await countText(page)).toBe('25 episodes');
    await mkdir(IMAGES, { recursive: true });
    await page.screenshot({ path: join(IMAGES, 'run-summary.png') });
    await page.close();
  });

  it('filters the episode table by text, role, reward range, error type and stop condition', async () => {
    const page = await open(reportUrl);
    await page.fill('input[name="text"]', 'sum-to-34');
    await expect.poll(() => countText(page)).toBe('4 of 25 episodes');
    await page.fill('input[name="text"]', '');
    await page.selectOption('select[name="role"]', 'player0');
    await expect.poll(() => countText(page)).toBe('7 of 25 episodes');
    await page.selectOption('select[name="role"]', 'player1');
    await expect.poll(() => countText(page)).toBe('6 of 25 episodes');
    await page.fill('input[name="min"]', '2');
    await expect.poll(() => countText(page)).toBe('1 of 25 episodes');
    await page.fill('input[name="max"]', '1.5');
    await expect.poll(() => countText(page)).toBe('0 of 25 episodes');
    expect(await page.locator('.table-empty').isVisible()).toBe(true);
    await page.click('button.clear');
    await page.selectOption('select[name="error"]', 'ProviderError');
    await expect.poll(() => countText(page)).toBe('1 of 25 episodes');
    expect(await page.locator('.tbody .trow').first().getAttribute('data-id')).toBe('error-provider');
    await page.selectOption('select[name="error"]', '');
    await page.selectOption('select[name="stop"]', 'error');
    await expect.poll(() => countText(page)).toBe('3 of 25 episodes');
    await page.close();
  });

  it('sorts by a role reward column', async () => {
    const page = await open(reportUrl);
    await page.click('.thead .th[data-key="r:player1"]');
    const first = await page.locator('.tbody .trow').first().getAttribute('data-id');
    expect(first).toMatch(/^kuhn-/);
    expect(await page.locator('.tbody .trow').first().locator('.reward-chip').last().textContent()).toBe('2');
    await page.close();
  });

  it('opens an episode from the table and shows the judge verdict beside the solver trace', async () => {
    const page = await open(reportUrl);
    await page.fill('input[name="text"]', 'judge-0-1');
    await expect.poll(() => countText(page)).toBe('1 of 25 episodes');
    await page.click('.tbody .trow[data-id="judge-0-1"]');
    await page.waitForSelector('body[data-episode="judge-0-1"]');
    expect(new URL(page.url()).hash).toBe('#episode=judge-0-1');
    expect(await page.locator('.trace-column').evaluateAll((els) => els.map((el) => el.getAttribute('data-agent')))).toEqual([
      'solver',
      'judge',
    ]);

    const solver = page.locator('.trace-column[data-agent="solver"]');
    const judge = page.locator('.trace-column[data-agent="judge"]');
    const beside = solver.locator('[data-testid="verdicts-beside"]');
    await expect.poll(() => beside.isVisible()).toBe(true);
    expect(await beside.textContent()).toContain('sum.py loops to 21 (off by one)');
    expect(await beside.locator('.verdict-tag').allTextContents()).toEqual(['no', 'partly']);
    expect(await judge.locator('[data-testid="judge-verdicts"]').textContent()).toContain('off by one');
    // The solver carries a copy of the verdict (as agentic-judge records it): it is about the
    // solver's trace, not written by it (issue 22 item 10).
    expect(await beside.locator('.section-label').textContent()).toBe('Verdicts on this trace, by judge');
    expect(await solver.textContent()).not.toContain('written by this judge');
    expect(await solver.locator('[data-testid="verdicts-beside"]').count()).toBe(1);
    expect(await judge.locator('[data-testid="judge-verdicts"] .section-label').textContent()).toBe(
      'Verdicts written by this judge',
    );
    // Side by side: the judge's column starts right of the solver's and they share the same rows.
    const s = (await solver.boundingBox())!;
    const j = (await judge.boundingBox())!;
    expect(j.x).toBeGreaterThanOrEqual(s.x + s.width - 1);
    expect(Math.abs(j.y - s.y)).toBeLessThan(2);
    expect(j.x + j.width).toBeLessThanOrEqual(1440);

    // Messages: system, user, assistant with folded reasoning and a tool call, the tool result, per-call usage.
    expect(await solver.locator('.msg.role-system').count()).toBe(1);
    expect(await solver.locator('.msg.role-assistant details.reasoning').first().getAttribute('open')).toBeNull();
    expect(await solver.locator('.tool-call b').first().textContent()).toBe('bash');
    expect(await solver.locator('.msg.role-tool .tool-ref').first().textContent()).toBe('bash · call_1');
    expect(await solver.locator('.call-meta').first().textContent()).toMatch(/^call 1 · \d+ ms · \d+ → \d+ tok/);
    expect(await solver.locator('.chip[data-metric="judge/solved"]').textContent()).toBe('judge/solved 0');

    await page.keyboard.press('Escape');
    await page.waitForSelector('.run-view:not([hidden])');
    // The README's screenshot: the same episode opened from the unfiltered table.
    await page.click('button.clear');
    await page.evaluate("location.hash = 'episode=judge-0-1'");
    await page.waitForSelector('body[data-episode="judge-0-1"] .trace-column[data-agent="judge"] .msg');
    await page.screenshot({ path: join(IMAGES, 'episode-view.png') });
    await page.close();
  });

  it('fits a proposer and four solvers in the window, and shows task names whole', async () => {
    const page = await open(`${reportUrl}#episode=propose-0`);
    await page.waitForSelector('body[data-episode="propose-0"] .trace-column[data-agent="proposer"]');
    const boxes = await page.locator('.trace-column').evaluateAll((els) => els.map((el) => el.getBoundingClientRect().right));
    expect(boxes).toHaveLength(5);
    for (const right of boxes) expect(right).toBeLessThanOrEqual(1440);
    await page.close();
    // Episode ids are UUIDs in a real run: the task name keeps its width, the id gives way.
    const runDir = await writeFixtureRun({
      dir: join(dir, 'uuid-ids'),
      episodes: [0, 1, 2].map((i) => judgeEpisode({ index: i, rollout: 0, solved: true, start: 0, id: randomUUID() })),
    });
    await writeHtmlReport({ runDir, outFile: join(dir, 'uuid-ids.html') });
    const table = await open(pathToFileURL(join(dir, 'uuid-ids.html')).href);
    const keys = table.locator('.tbody .task-key');
    expect(await keys.count()).toBe(3);
    const cut = await keys.evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth).map((el) => el.textContent));
    expect(cut).toEqual([]);
    await table.close();
  });

  it('gives every episode a stable URL fragment that opens it directly', async () => {
    const page = await open(`${reportUrl}#episode=${encodeURIComponent('kuhn-3')}`);
    await page.waitForSelector('body[data-episode="kuhn-3"]');
    expect(await page.locator('.trace-column').evaluateAll((els) => els.map((el) => el.getAttribute('data-agent')))).toEqual([
      'player0',
      'player1',
    ]);
    expect(await page.locator('.trace-column[data-agent="player0"] .trace-head').textContent()).toMatch(/"kuhn":\{"seat":0/);
    await page.goto(`${reportUrl}#episode=propose-1`);
    await page.waitForSelector('body[data-episode="propose-1"]');
    expect(await page.locator('.trace-column').count()).toBe(5);
    await page.goto(`${reportUrl}#episode=error-provider`);
    await page.waitForSelector('body[data-episode="error-provider"]');
    expect(await page.locator('.msg.failed-call').textContent()).toContain('ProviderError (HTTP 502)');
    await page.close();
  });

  it('never touches the network from the static report, and raises no page error', () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((url) => !url.startsWith('file://') && !url.startsWith('data:'))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('works served on loopback, fetching the episode on demand', async () => {
    const served = await serveRun({ runDir: join(dir, RUN_NAME) });
    try {
      const page = await open(`${served.url}#episode=judge-2-0`);
      await page.waitForSelector('body[data-episode="judge-2-0"]');
      expect(await page.locator('.trace-column[data-agent="solver"] [data-testid="verdicts-beside"]').textContent()).toContain(
        'Re-ran sum.py',
      );
      expect(requests).toContain(`${served.url}api/episodes/judge-2-0`);
      await page.close();
    } finally {
      await served.close();
    }
    expect(pageErrors).toEqual([]);
  });
});
