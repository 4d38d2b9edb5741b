import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderReport, writeReport } from './report.ts';
import { movingAverage } from './report-chart.ts';
import { evaluatorGroups, frozenRoles } from './report-metrics.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Rows of a two-role source where `frozen` is never trained (logged as is_trainable 0, reward 0). */
function rows(options: { source: string; roles: string[]; frozen?: string; steps?: number }) {
  return Array.from({ length: options.steps ?? 6 }, (_, i) => {
    const row: Record<string, number> = { step: i + 1, episodes: (i + 1) * 8, 'time/elapsed': i + 1.5 };
    for (const role of options.roles) {
      const frozen = role === options.frozen;
      row[`train/${options.source}/${role}/reward/mean`] = frozen ? 0 : i / 10;
      row[`train/${options.source}/${role}/is_trainable/mean`] = frozen ? 0 : 1;
      row[`train/${options.source}/${role}/metric/valid/mean`] = 1;
    }
    row[`eval/${options.source}/probe/accuracy/short`] = i / 6;
    row[`eval/${options.source}/probe/accuracy/long`] = i / 12;
    row[`eval/${options.source}/gap`] = 1 - i / 6;
    row[`eval/${options.source}/gap_average`] = 1 - i / 8;
    row[`eval/${options.source}/score`] = 3;
    return row;
  });
}

describe('renderReport', () => {
  it("draws each policy's trainer series in the loss chart of a run of several policies", () => {
    const data = Array.from({ length: 4 }, (_, i) => ({
      step: i + 1,
      episodes: (i + 1) * 8,
      'time/elapsed': i + 1,
      'trainer/west/loss': 1 / (i + 1),
      'trainer/west/step': i + 1,
      'trainer/east/loss': 2 / (i + 1),
      'trainer/east/step': i + 1,
    }));
    const html = renderReport({ rows: data, config: null });
    const chart = html.slice(html.indexOf('data-chart="dynamics-loss"'));
    const loss = chart.slice(0, chart.indexOf('</figure>'));
    expect(loss).toContain('data-series="trainer/west/loss"');
    expect(loss).toContain('data-series="trainer/east/loss"');
  });

  it('draws no curve for a frozen role and names it frozen in the legend and the header', () => {
    const html = renderReport({
      rows: rows({ source: 'duel', roles: ['attacker', 'defender'], frozen: 'defender' }),
      config: null,
    });
    expect(html).toContain('data-series="train/duel/attacker/reward/mean"');
    expect(html).not.toContain('data-series="train/duel/defender/reward/mean"');
    expect(html).not.toContain('data-series="train/duel/defender/metric/valid/mean"');
    expect(html).toMatch(/<li class="frozen" data-frozen="defender">.*frozen, not trained/);
    expect(html).toMatch(/<div class="tile frozen"><div class="tile-label">defender<\/div><div class="tile-value">frozen/);
  });

  it('takes a role as frozen when the config binds it to a checkpoint, a model or trainable = false', () => {
    const config = {
      train: {
        source: [
          {
            env: 'duel',
            roles: { attacker: { policy: 'main' }, defender: { checkpoint: '/runs/a/checkpoint' }, judge: { trainable: false } },
          },
        ],
      },
    };
    const frozen = frozenRoles(rows({ source: 'duel', roles: ['attacker', 'defender', 'judge'] }), config);
    expect([...(frozen.get('duel') ?? [])].sort()).toEqual(['defender', 'judge']);
  });

  it('groups the evaluator’s metrics by folder and by a name another extends', () => {
    const groups = evaluatorGroups(Object.keys(rows({ source: 'duel', roles: ['a'] })[0] ?? {}));
    expect(groups.map((g) => [g.name, g.keys.map((k) => k.label)])).toEqual([
      ['probe/accuracy', ['short', 'long']],
      ['gap', ['gap', 'gap_average']],
      ['score', ['score']],
    ]);
  });

  it('shows the key settings, steps, episodes, wall time and final metrics in the header', () => {
    const config = {
      seed: 7,
      maxSteps: 6,
      groupsPerStep: 2,
      train: { source: [{ env: 'duel', groupSize: 4 }] },
      trainer: { lr: 0.001 },
    };
    const html = renderReport({ rows: rows({ source: 'duel', roles: ['attacker'] }), config, runName: 'first' });
    for (const text of ['>seed</dt><dd>7<', '>max_steps</dt><dd>6<', '>group_size</dt><dd>4<', '>lr</dt><dd>0.001<'])
      expect(html).toContain(text);
    expect(html).toContain('<div class="tile-label">steps</div><div class="tile-value">6</div>');
    expect(html).toContain('<div class="tile-label">episodes</div><div class="tile-value">48</div>');
    expect(html).toContain('<div class="tile-label">wall time</div><div class="tile-value">6.5 s</div>');
    expect(html).toContain('<div class="tile-label">gap_average</div><div class="tile-value">0.375</div>');
    expect(html).toContain('<div class="tile-label">attacker reward</div>');
  });

  it('draws a long noisy reward faint, with its centred moving average over it', () => {
    const html = renderReport({ rows: rows({ source: 'duel', roles: ['attacker'], steps: 60 }), config: null });
    const chart = /<figure class="chart wide" data-chart="train-reward-duel">.*?<\/figure>/.exec(html)?.[0] ?? '';
    expect(chart).toContain('moving average of 3 steps');
    expect(chart.match(/<path class="line raw" data-series="train\/duel\/attacker\/reward\/mean"/g)).toHaveLength(1);
    expect(chart.match(/<path class="line smooth" data-series="train\/duel\/attacker\/reward\/mean"/g)).toHaveLength(1);
    expect(
      movingAverage(
        [
          [1, 0],
          [2, 3],
          [3, 0],
          [4, 3],
        ],
        3,
      ),
    ).toEqual([
      [1, 1.5],
      [2, 1],
      [3, 2],
      [4, 1.5],
    ]);
  });

  it('gives a large folder of evaluator metrics one tile (its mean), the chart the rest', () => {
    const data = rows({ source: 'duel', roles: ['attacker'] }).map((r) => ({
      ...r,
      ...Object.fromEntries(['a', 'b', 'c', 'd', 'mean'].map((k) => [`eval/duel/probe/${k}`, 0.5])),
    }));
    const html = renderReport({ rows: data, config: null });
    expect(html).toContain('<div class="tile-label">probe/mean</div>');
    expect(html).not.toContain('<div class="tile-label">probe/a</div>');
    expect(html).toContain('data-series="eval/duel/probe/a"');
  });

  it('escapes every string that comes from the config, the metric keys or the run name', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const data = rows({ source: 'duel', roles: ['attacker'] }).map((r) => ({ ...r, [`eval/duel/${evil}`]: 1 }));
    const html = renderReport({
      rows: data,
      config: { train: { source: [{ env: `"><script>alert(2)</script>`, roles: { [evil]: { trainable: false } } }] } },
      runName: evil,
    });
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});

describe('writeReport', () => {
  it('inlines the evaluator’s JSON tables and SVG plots, and never reads an artifact or the config through a link', async () => {
    const out = await mkdtemp(join(tmpdir(), 'troupe-report-'));
    dirs.push(out);
    await writeFile(
      join(out, 'metrics.jsonl'),
      `${rows({ source: 'duel', roles: ['a'] })
        .map((r) => JSON.stringify(r))
        .join('\n')}\n{"step":7,`,
    );
    await writeFile(join(out, 'table.json'), JSON.stringify({ open: [0.25, 0.75], close: [0.5, 0.5] }));
    await writeFile(join(out, 'curve.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const secret = join(out, 'secret.txt');
    await writeFile(secret, JSON.stringify({ seed: 'do-not-show' }));
    await symlink(secret, join(out, 'leak.json'));
    await symlink(secret, join(out, 'config.json'));
    const html = await readFile(await writeReport({ out }), 'utf8');
    expect(html).toContain('data-artifact="table.json"');
    expect(html).toMatch(/<th>open<\/th><td class="num bar" style="--bar:25.0%">0.25<\/td>/);
    // An SVG plot is an image (its scripts never run in the page), inlined as a data: URL.
    expect(html).toContain(
      `<img alt="curve.svg" src="data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>').toString('base64')}">`,
    );
    expect(html).not.toContain('leak.json');
    expect(html).not.toContain('do-not-show');
    // The torn last line is left out: six steps.
    expect(html).toContain('<div class="tile-label">steps</div><div class="tile-value">6</div>');
  });
});
