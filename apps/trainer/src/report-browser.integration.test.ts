import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../test/support/chromium.ts';
import { DEFAULT_CONFIG } from './default-config.ts';
import { train } from './run.ts';
import { applySet, readRunConfigFile } from './run-config.ts';

// The training report of real runs, laid out by real headless Chromium: two envs (one with a
// frozen role, one whose evaluator logs a folder of metrics), at a wide and a narrow viewport.
const missing = chromiumMissing();
if (missing) console.warn(`[report-browser.integration.test] skipped: ${missing}`);
const CONFIGS = fileURLToPath(new URL('../configs/', import.meta.url));

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}
const overlaps = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

async function tinyRun(options: { file: string; out: string; sets: string[] }): Promise<void> {
  const config = await readRunConfigFile(options.file);
  for (const set of [
    'groups_per_step=2',
    'checkpoint_every=0',
    'trainer.worker_thread=false',
    'policy.d_model=8',
    'policy.layers=1',
    'policy.heads=2',
    'policy.ffn_mult=1',
    ...options.sets,
  ])
    applySet(config, set);
  await train({ config, out: options.out });
}

// Under CI (which installs Chromium) a missing browser fails the suite rather than skipping it.
describe.skipIf(missing !== null && process.env.CI !== 'true')(
  `the training report in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let dir: string;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    const pageErrors: string[] = [];
    const runs: Record<'kuhn' | 'solver', string> = { kuhn: '', solver: '' };

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'troupe-report-browser-'));
      runs.kuhn = join(dir, 'kuhn');
      runs.solver = join(dir, 'solver');
      await tinyRun({
        file: DEFAULT_CONFIG,
        out: runs.kuhn,
        sets: ['max_steps=12', 'train.source.0.group_size=2', 'train.source.0.roles.player1.trainable=false'],
      });
      await tinyRun({
        file: join(CONFIGS, 'proposer-solver.toml'),
        out: runs.solver,
        sets: ['max_steps=6', 'train.eval_every=2', 'train.source.0.group_size=2'],
      });
      browser = await launchChromium();
    });

    afterAll(async () => {
      expect(pageErrors).toEqual([]);
      await browser?.close();
      await rm(dir, { recursive: true, force: true });
    });

    async function open(run: string, width: number): Promise<{ page: Page; requests: string[]; close: () => Promise<void> }> {
      const page = await browser.context.newPage();
      page.on('pageerror', (error) => pageErrors.push(String(error)));
      await page.setViewportSize({ width, height: 900 });
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(pathToFileURL(join(run, 'report.html')).href);
      return { page, requests, close: () => page.close() };
    }

    for (const width of [1440, 800])
      it(`spans the page width with every headline chart at ${width} px, legends clear of the lines`, async () => {
        for (const run of [runs.kuhn, runs.solver]) {
          const { page, requests, close } = await open(run, width);
          // The content box of <main>: its width less its padding (the page's margins).
          const content = await page.locator('main').evaluate((main) => {
            const first = main.firstElementChild?.getBoundingClientRect();
            return first ? first.width : 0;
          });
          expect(content).toBeGreaterThan(width - 100);
          const charts = await page.locator('figure.chart.wide').evaluateAll((figures) => {
            const box = (e: { getBoundingClientRect(): Box } | null) => {
              const r = e?.getBoundingClientRect() ?? { x: 0, y: 0, width: 0, height: 0 };
              return { x: r.x, y: r.y, width: r.width, height: r.height };
            };
            return figures.map((f) => ({
              plot: box(f.querySelector('.plot')),
              legend: box(f.querySelector('.legend')),
              items: [...f.querySelectorAll('.legend li')].map(box),
              lines: [...f.querySelectorAll('path.line')].map(box),
            }));
          });
          expect(charts.length).toBeGreaterThanOrEqual(2);
          for (const chart of charts) {
            // The plot takes the content width but for the tick column and the right margin.
            expect(chart.plot.width).toBeGreaterThan(content - 90);
            expect(chart.lines.length).toBeGreaterThan(0);
            expect(overlaps(chart.legend, chart.plot)).toBe(false);
            for (const line of chart.lines) {
              expect(line.width).toBeGreaterThan(0);
              expect(overlaps(chart.legend, line)).toBe(false);
              for (const item of chart.items) expect(overlaps(item, line)).toBe(false);
            }
          }
          // Self-contained: nothing but the file itself (and its inlined images) is requested.
          expect(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'))).toEqual([]);
          await close();
        }
      });

    it('labels every axis with round numbers: integer steps, 1-2-5 steps between ticks, no duplicates', async () => {
      for (const run of [runs.kuhn, runs.solver]) {
        const { page, close } = await open(run, 1440);
        const axes = await page.locator('figure.chart').evaluateAll((charts) =>
          charts.flatMap((chart) =>
            [...chart.querySelectorAll('.y-ticks, .x-ticks')].map((axis) => ({
              x: axis.classList.contains('x-ticks'),
              labels: [...axis.querySelectorAll('span')].map((s) => s.textContent ?? ''),
            })),
          ),
        );
        expect(axes.length).toBeGreaterThan(20);
        for (const { x, labels } of axes) {
          expect(labels.length).toBeGreaterThanOrEqual(2);
          expect(new Set(labels).size).toBe(labels.length);
          const values = labels.map((label) => {
            expect(label).toMatch(/^-?(\d+(\.\d+)?(k|M|e-\d+)?)$/);
            expect(label).not.toMatch(/\.\d*0(\D|$)/); // no trailing zeros ("1.000", "40.0")
            const scale = label.endsWith('k') ? 1e3 : label.endsWith('M') ? 1e6 : 1;
            return Number(label.replace(/[kM]$/, '')) * scale;
          });
          if (x) for (const v of values) expect(Number.isInteger(v)).toBe(true);
          const step = (values[1] as number) - (values[0] as number);
          const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
          expect([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6)).toBe(true);
          for (let i = 1; i < values.length; i++)
            expect(Math.abs((values[i] as number) - (values[i - 1] as number) - step)).toBeLessThan(step * 1e-6);
        }
        await close();
      }
    });

    it('draws no curve for a frozen role and names it frozen in the legend and the header', async () => {
      const { page, close } = await open(runs.kuhn, 1440);
      const reward = page.locator('figure[data-chart="train-reward-kuhn-poker"]');
      expect(await reward.locator('path.line').evaluateAll((paths) => paths.map((p) => p.getAttribute('data-series')))).toEqual([
        'train/kuhn-poker/player0/reward/mean',
      ]);
      expect(await reward.locator('.legend li[data-frozen="player1"]').textContent()).toContain('frozen, not trained');
      expect(await page.locator('path[data-series^="train/kuhn-poker/player1/"]').count()).toBe(0);
      // Pointing at the plot reads each drawn line's value at the step under the pointer.
      const plot = reward.locator('.plot');
      const box = (await plot.boundingBox()) as Box;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      const tip = await plot.locator('.tip > *').allTextContents();
      expect(tip[0]).toMatch(/^step \d+$/);
      expect(tip.slice(1)).toEqual([expect.stringMatching(/^player0 -?\d/)]);
      expect(await page.locator('.tile.frozen').textContent()).toMatch(/^player1frozen/);
      // The header: the run's settings, steps, episodes, wall time and the evaluator's last values.
      const tiles = await page.locator('.tile .tile-label').allTextContents();
      expect(tiles.slice(0, 3)).toEqual(['steps', 'episodes', 'wall time']);
      expect(tiles).toContain('nash_conv');
      expect(await page.locator('.settings-block h3').allTextContents()).toEqual([
        'source kuhn-poker',
        'run',
        'policy',
        'trainer',
      ]);
      // The evaluator's policy tables, as tables.
      expect(await page.locator('figure[data-artifact="policy-table.json"] tbody tr').count()).toBe(12);
      await page.screenshot({ path: join(dir, 'report.png'), fullPage: true });
      await close();
    });

    it('charts the second env’s evaluator folder in one chart, one line per metric', async () => {
      const { page, close } = await open(runs.solver, 1440);
      const probe = page.locator('figure[data-chart="eval-proposer-solver-probe/accuracy"]');
      const series = await probe.locator('path.line').evaluateAll((paths) => paths.map((p) => p.getAttribute('data-series')));
      expect(series).toContain('eval/proposer-solver/probe/accuracy/mean');
      expect(series.length).toBeGreaterThan(3);
      expect(await probe.locator('.legend li').count()).toBe(series.length);
      await close();
    });
  },
);
