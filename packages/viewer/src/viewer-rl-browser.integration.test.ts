import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../test/support/chromium.ts';
import { writeFixtureRun } from './__fixtures__/fixture-run.ts';
import {
  comparedRuns,
  FIRST_CALL_LOGPROBS,
  JUDGE_CALL_COST,
  POLICY_VERSION,
  TOKEN_ADVANTAGE,
  tokenEpisode,
} from './__fixtures__/training-run.ts';
import type { ServedRun } from './serve-run.ts';
import { serveRunFolder } from './serve-run-folder.ts';
import { writeCompareReport } from './write-compare-report.ts';
import { writeHtmlReport } from './write-html-report.ts';

// The viewer as an RL tool (issue 17 item 10), in real headless Chromium: the runs of a folder, two
// runs compared, each call's raw request and response, and a sampled message's tokens.
const missing = chromiumMissing();
if (missing) console.warn(`[viewer-rl-browser.integration.test] skipped: ${missing}`);
const IMAGES = fileURLToPath(new URL('../../../../docs/images/', import.meta.url));

describe.skipIf(missing !== null)(`troupe view for RL in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let dir: string;
  let served: ServedRun;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  const pageErrors: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-view-rl-'));
    const { a, b } = comparedRuns();
    await writeFixtureRun({ dir: join(dir, 'runs', 'baseline'), episodes: a });
    await writeFixtureRun({ dir: join(dir, 'runs', 'tuned'), episodes: b });
    await writeFixtureRun({ dir: join(dir, 'training'), episodes: [tokenEpisode()] });
    served = await serveRunFolder({ folder: join(dir, 'runs') });
    browser = await launchChromium({ width: 1440, height: 900 });
  });

  afterAll(async () => {
    await browser?.close();
    await served?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function open(url: string): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(url);
    await page.waitForSelector('body[data-ready]');
    return page;
  }

  const cell = (page: Page, role: string, metric: string, side: 'a' | 'b' | 'delta') =>
    page.locator(`.compare-role[data-role="${role}"] tr[data-metric="${metric}"] td.${side}`).textContent();

  it('lists the runs of a folder and compares the two picked as A and B', async () => {
    const page = await open(served.url);
    expect(
      await page.locator('.runs-table tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run'))),
    ).toHaveLength(2);
    expect(await page.locator('.runs-table tr[data-run="baseline"] .chip[data-role="solver"]').textContent()).toBe(
      'solver 0.5 · pass@1 50.0%',
    );
    await page.check('input[name="a"][value="baseline"]');
    await page.check('input[name="b"][value="tuned"]');
    expect(await page.locator('.pick-note').textContent()).toBe('A: baseline · B: tuned');
    await page.click('a.btn.compare');
    await page.waitForURL(/\/compare\?a=baseline&b=tuned$/);
    await page.waitForSelector('body[data-ready] .compare-role');
    expect(await page.locator('.compare-run').allTextContents()).toEqual([
      expect.stringMatching(/^A baseline · agentic-judge · 6 episodes/),
      expect.stringMatching(/^B tuned · agentic-judge · 7 episodes/),
    ]);
    // Per-role rewards and pass@k with the difference B − A; tokens and cost of each.
    expect(await cell(page, 'solver', 'reward', 'a')).toBe('0.5');
    expect(await cell(page, 'solver', 'reward', 'b')).toBe('0.857');
    expect(await cell(page, 'solver', 'reward', 'delta')).toBe('+0.357');
    expect(
      await page.locator('.compare-role[data-role="solver"] tr[data-metric="reward"] td.delta').getAttribute('class'),
    ).toContain('good-text');
    expect(await cell(page, 'solver', 'pass@1', 'a')).toBe('50.0%');
    expect(await cell(page, 'solver', 'pass@1', 'b')).toBe('87.5%');
    expect(await cell(page, 'solver', 'pass@1', 'delta')).toBe('+37.5 pt');
    // Every task of A has one solved rollout of two.
    expect(await cell(page, 'solver', 'pass@2', 'a')).toBe('100%');
    expect(await cell(page, 'solver', 'tokens-in', 'b')).not.toBe('—');
    expect(await cell(page, 'solver', 'cost', 'a')).toMatch(/^\$0\.\d+$/);
    // Judge cost apart: B's solver traces were each scored by one single-call judge, A's by none.
    expect(await cell(page, 'solver', 'judge-cost', 'a')).toBe('$0');
    expect(await cell(page, 'solver', 'judge-cost', 'b')).toBe(`$${(7 * JUDGE_CALL_COST).toFixed(2)}`);
    expect(await page.locator('.compare-totals tr[data-metric="episodes"] td.delta').textContent()).toBe('+1');
    // Tasks of both runs, each with its episodes in A and in B.
    expect(await page.locator('.task-compare tbody tr').count()).toBe(4);
    const onlyB = page.locator('.task-compare tr[data-task="sum-to-41"]');
    expect(await onlyB.locator('td.a').textContent()).toBe('—');
    await page.check('input[name="compare-both"]');
    expect(await page.locator('.task-compare tbody tr').count()).toBe(3);
    await mkdir(IMAGES, { recursive: true });
    await page.screenshot({ path: join(IMAGES, 'compare-runs.png') });
    await page.selectOption('select[name="compare-sort"]', 'delta');
    expect(await page.locator('.task-compare tbody tr').first().getAttribute('data-task')).toBe('sum-to-34');
    // B's own page: the solver's card gives its cost with the judges' share apart.
    await page.goto(`${served.url}runs/tuned/`);
    await page.waitForSelector('.role-foot');
    const judges = `judges $${(7 * JUDGE_CALL_COST).toFixed(2)}`;
    expect((await page.locator('.role-foot').allTextContents()).some((t) => t.includes(judges))).toBe(true);
    await page.close();
  });

  it('opens the same task’s episodes of A and B next to each other, and switches rollouts', async () => {
    const page = await open(`${served.url}compare?a=baseline&b=tuned`);
    await page.click('.task-compare tr[data-task="sum-to-27"] a.task-link');
    await page.waitForSelector('body[data-pair="a-1-0|b-1-0"]');
    const panes = page.locator('.compare-pane');
    expect(
      await panes.evaluateAll((els) => els.map((el) => [el.getAttribute('data-side'), el.getAttribute('data-episode')])),
    ).toEqual([
      ['a', 'a-1-0'],
      ['b', 'b-1-0'],
    ]);
    const a = (await panes.nth(0).boundingBox())!;
    const b = (await panes.nth(1).boundingBox())!;
    expect(b.x).toBeGreaterThanOrEqual(a.x + a.width - 1);
    expect(Math.abs(a.y - b.y)).toBeLessThan(2);
    // Each pane shows its episode's traces; the solver's messages are rendered.
    expect(
      await panes
        .nth(0)
        .locator('.trace-column')
        .evaluateAll((els) => els.map((el) => el.getAttribute('data-agent'))),
    ).toEqual(['solver', 'judge']);
    await page.waitForSelector('.compare-pane[data-side="b"] .trace-column[data-agent="solver"] .msg.role-assistant');
    await page.screenshot({ path: join(IMAGES, 'compare-episodes.png') });
    expect(await panes.nth(0).locator('.pane-reward').first().textContent()).toBe('solver 0');
    expect(await panes.nth(1).locator('.pane-reward').first().textContent()).toBe('solver 1');
    await panes.nth(0).locator('a.btn.rollout', { hasText: '1' }).click();
    await page.waitForSelector('body[data-pair="a-1-1|b-1-0"]');
    expect(await page.locator('.compare-pane[data-side="a"]').getAttribute('data-episode')).toBe('a-1-1');
    expect(requests).toContain(`${served.url}runs/baseline/api/episodes/a-1-1`);
    await page.keyboard.press('Escape');
    await page.waitForSelector('.compare-view:not([hidden])');
    await page.close();
  });

  it('writes the comparison as one static page that opens offline', async () => {
    const outFile = join(dir, 'compare.html');
    await writeCompareReport({ runDirs: [join(dir, 'runs', 'baseline'), join(dir, 'runs', 'tuned')], outFile });
    const url = pathToFileURL(outFile).href;
    const before = requests.length;
    const page = await open(`${url}#task=sum-to-20&a=a-0-1&b=b-0-1`);
    await page.waitForSelector('body[data-pair="a-0-1|b-0-1"] .compare-pane[data-side="b"] .trace-column');
    expect(await cell(page, 'solver', 'reward', 'b')).toBe('0.857');
    const offsite = requests.slice(before).filter((u) => !u.startsWith('file://') && !u.startsWith('data:'));
    expect(offsite).toEqual([]);
    await page.close();
  });

  it('shows each model call’s request and response as recorded', async () => {
    const page = await open(`${served.url}runs/baseline/#episode=a-0-0`);
    await page.waitForSelector('body[data-episode="a-0-0"] .trace-column[data-agent="solver"] .msg.role-assistant');
    expect(await page.locator('a.runs-link').getAttribute('href')).toBe('../../');
    const message = page.locator('.trace-column[data-agent="solver"] .msg.role-assistant').first();
    const raw = message.locator('details.call-raw');
    expect(await raw.locator('.raw-request').count()).toBe(0);
    await raw.locator('summary').click();
    await raw.locator('.raw-request').waitFor();
    const request = JSON.parse((await raw.locator('.raw-request').textContent())!);
    expect(request.model).toBe('qwen3-4b');
    expect(request.sampling).toEqual({ temperature: 1, maxTokens: 4096 });
    expect(request.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(request.messages[1].content).toContain('sum of the integers from 1 to 20');
    const response = JSON.parse((await raw.locator('.raw-response').textContent())!);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.message.toolCalls[0].name).toBe('bash');
    expect(response.usage.promptTokens).toBeGreaterThan(0);
    expect(await raw.locator('.call-raw-meta').textContent()).toContain('policy version: not recorded');
    await page.close();
  });

  it('shows a sampled message token by token: ids, mask, logprob colours, advantages and the policy version', async () => {
    const outFile = join(dir, 'training.html');
    await writeHtmlReport({ runDir: join(dir, 'training'), outFile });
    const page = await open(`${pathToFileURL(outFile).href}#episode=token-episode`);
    await page.waitForSelector('body[data-episode="token-episode"] .msg.role-assistant');
    const first = page.locator('.msg.role-assistant').first();
    expect(await first.locator('.call-meta').textContent()).toContain(`policy v${POLICY_VERSION}`);
    await first.locator('details.tokens summary').click();
    await first.locator('.tok-grid').waitFor();
    const tokens = first.locator('.tok-grid .tok');
    expect(await tokens.evaluateAll((els) => els.map((el) => Number(el.textContent)))).toEqual([
      101, 102, 103, 104, 105, 201, 202, 203, 204, 205, 206,
    ]);
    expect(await tokens.evaluateAll((els) => els.map((el) => el.getAttribute('data-mask')))).toEqual([
      ...Array(5).fill('0'),
      ...Array(6).fill('1'),
    ]);
    expect(
      await first.locator('.tok.sampled').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-logprob')))),
    ).toEqual(FIRST_CALL_LOGPROBS);
    expect(
      await first.locator('.tok.sampled').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-advantage')))),
    ).toEqual(Array(6).fill(TOKEN_ADVANTAGE));
    // Colour by logprob: the near-certain token is green, the unlikely one red; prompt tokens are not coloured by value.
    // Browser-side code is passed as strings: this package is type-checked without the DOM library.
    const background = async (id: number) =>
      (await page.evaluate(
        `getComputedStyle(document.querySelector('.tok-grid .tok[data-token="${id}"]')).backgroundColor`,
      )) as string;
    const sure = await background(201);
    const unlikely = await background(205);
    expect(sure).not.toBe(unlikely);
    const [r1, g1] = sure.match(/\d+/g)!.map(Number);
    const [r2, g2] = unlikely.match(/\d+/g)!.map(Number);
    expect(g1! > r1!).toBe(true);
    expect(r2! > g2!).toBe(true);
    expect(await first.locator('.tok[data-token="101"]').getAttribute('title')).toContain('prompt (mask 0)');
    expect(await first.locator('.tok[data-token="205"]').getAttribute('title')).toContain('logprob -4.0000');
    expect(await first.locator('.tok-stats').textContent()).toBe(
      `5 prompt · 6 sampled · mean logprob -1.243 · min -4 · mean advantage ${TOKEN_ADVANTAGE} · policy v${POLICY_VERSION}`,
    );
    // The recorded call names the policy version in its raw block too (ModelCall.policyVersion).
    await first.locator('details.call-raw summary').click();
    await first.locator('.raw-response').waitFor();
    expect(JSON.parse((await first.locator('.raw-response').textContent())!).policyVersion).toBe(POLICY_VERSION);
    expect(await first.locator('.call-raw-meta').textContent()).toContain(`policy version: ${POLICY_VERSION}`);
    await first.locator('details.call-raw summary').click();
    await page.screenshot({ path: join(IMAGES, 'tokens.png') });
    // Colour by advantage: every sampled token the same (one advantage), prompt tokens plain.
    await first.locator('select[name="colour-by"]').selectOption('advantage');
    const byAdvantage = (await page.evaluate(
      "[...new Set([...document.querySelectorAll('.tok-grid')[0].querySelectorAll('.tok.sampled')].map((el) => getComputedStyle(el).backgroundColor))]",
    )) as string[];
    expect(byAdvantage).toHaveLength(1);
    expect(byAdvantage[0]).not.toBe(sure);
    // The second call's node continues the first: its own scaffold (2 prompt tokens) then 2 sampled.
    const second = page.locator('.msg.role-assistant').nth(1);
    await second.locator('details.tokens summary').click();
    await second.locator('.tok-grid').waitFor();
    expect(await second.locator('.tok-grid .tok').evaluateAll((els) => els.map((el) => el.getAttribute('data-mask')))).toEqual([
      '0',
      '0',
      '1',
      '1',
    ]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
