import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUHN_INFO_SETS } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { TrainRunConfigSchema } from './config.ts';
import { readMetrics, scheduledBeta1, scheduledLr, scheduledRefKlTau, train } from './loop.ts';

const tiny = {
  maxSteps: 2,
  groupSize: 2,
  groupsPerStep: 2,
  workerThread: false,
  checkpointEvery: 1,
  policy: { dModel: 8, layers: 1, heads: 2, ffnMult: 1 },
};

describe('train (the embedded loop)', () => {
  it('plays, scores, trains and swaps weights each step; writes metrics, policy tables, report and checkpoints; resumes', async () => {
    const out = await mkdtemp(join(tmpdir(), 'troupe-train-'));
    const result = await train({ config: tiny, out });
    expect(result.steps).toBe(2);
    expect(result.hands).toBe(8);
    const metrics = await readMetrics(out);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(typeof m.nash_conv).toBe('number');
      expect(typeof m.nash_conv_average).toBe('number');
      expect(m.forfeit_rate).toBeGreaterThanOrEqual(0);
      expect(typeof m['player0/reward/mean']).toBe('number');
    }
    expect(metrics[1]?.policy_version).toBe(0); // step 2 trained on a batch played one step behind
    const table = JSON.parse(await readFile(join(out, 'policy-table.json'), 'utf8')) as Record<string, [number, number]>;
    expect(Object.keys(table)).toEqual([...KUHN_INFO_SETS]);
    for (const [p, b] of Object.values(table)) expect(p + b).toBeCloseTo(1, 5);
    expect(existsSync(join(out, 'policy-table-average.json'))).toBe(true);
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('NashConv');

    const resumed = await train({ config: { ...tiny, maxSteps: 3 }, out, resume: true });
    expect(resumed.steps).toBe(3);
    expect((await readMetrics(out)).map((m) => m.step)).toEqual([1, 2, 3]);

    if (existsSync('/usr/bin/chromium')) {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
      try {
        const page = await browser.newPage();
        await page.goto(`file://${join(out, 'report.html')}`);
        expect(await page.locator('svg').count()).toBeGreaterThanOrEqual(4);
        expect(await page.locator('#summary').textContent()).toMatch(/hands 12/);
      } finally {
        await browser.close();
      }
    }
    await rm(out, { recursive: true, force: true });
  });
});

describe('config', () => {
  it('merges a partial trainer object over the Kuhn defaults (setting lr keeps β1 = 0) and names a bad field', () => {
    const config = TrainRunConfigSchema.parse({ trainer: { lr: 1e-3 } });
    expect(config.trainer.lr).toBe(1e-3);
    expect(config.trainer.betas).toEqual([0, 0.999]);
    expect(config.trainer.refKlTau).toBe(0.15);
    expect(TrainRunConfigSchema.parse({}).trainer.betas).toEqual([0, 0.999]);
    const bad = TrainRunConfigSchema.safeParse({ trainer: { lr: -1 } });
    expect(bad.success ? null : bad.error.issues[0]?.path).toEqual(['trainer', 'lr']);
    expect(TrainRunConfigSchema.safeParse({ trainer: 'fast' }).success).toBe(false);
  });
});

describe('schedules', () => {
  it('decays the learning rate (cosine) from trainer.lr to lr × lrFinalFraction over the first lrDecayFraction of the steps', () => {
    const config = TrainRunConfigSchema.parse({ maxSteps: 11, trainer: { lr: 1e-2 }, lrFinalFraction: 0.1, lrDecayFraction: 1 });
    expect(scheduledLr(config, 0)).toBeCloseTo(1e-2, 10);
    expect(scheduledLr(config, 5)).toBeCloseTo(5.5e-3, 10);
    expect(scheduledLr(config, 10)).toBeCloseTo(1e-3, 10);
    const early = TrainRunConfigSchema.parse({ maxSteps: 21, trainer: { lr: 1e-2 }, lrFinalFraction: 0.1, lrDecayFraction: 0.5 });
    expect(scheduledLr(early, 5)).toBeCloseTo(5.5e-3, 10);
    expect(scheduledLr(early, 10)).toBeCloseTo(1e-3, 10);
    expect(scheduledLr(early, 20)).toBeCloseTo(1e-3, 10);
  });

  it('switches Adam β1 to momentumAtFloor once the learning rate is at its floor (and leaves it alone by default)', () => {
    const config = TrainRunConfigSchema.parse({ maxSteps: 11, lrDecayFraction: 0.5, momentumAtFloor: 0.9 });
    expect(scheduledBeta1(config, 4)).toBeUndefined();
    expect(scheduledBeta1(config, 5)).toBe(0.9);
    expect(scheduledBeta1(config, 10)).toBe(0.9);
    expect(scheduledBeta1(TrainRunConfigSchema.parse({ maxSteps: 11 }), 10)).toBeUndefined();
  });

  it('decays refKlTau from refKlTauStart to trainer.refKlTau over the first refKlDecayFraction of the steps, then holds it', () => {
    const config = TrainRunConfigSchema.parse({
      maxSteps: 101,
      trainer: { refKlTau: 0.05 },
      refKlTauStart: 0.5,
      refKlDecayFraction: 0.2,
    });
    expect(scheduledRefKlTau(config, 0)).toBeCloseTo(0.5, 10);
    expect(scheduledRefKlTau(config, 10)).toBeCloseTo(0.275, 10);
    expect(scheduledRefKlTau(config, 20)).toBeCloseTo(0.05, 10);
    expect(scheduledRefKlTau(config, 80)).toBeCloseTo(0.05, 10);
    expect(scheduledRefKlTau(TrainRunConfigSchema.parse({ refKlTauStart: null, trainer: { refKlTau: 0.07 } }), 0)).toBe(0.07);
  });
});
