import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from './__fixtures__/temp-dirs.ts';
import { tinyConfig } from './__fixtures__/tiny-runs.ts';
import { troupeCli } from './__fixtures__/trainer-cli.ts';
import { bradleyTerryElo, type CrossplayResult, crossplay, crossplayHtml } from './crossplay.ts';
import { DEFAULT_CONFIG } from './default-config.ts';
import { train } from './run.ts';

const tempDir = tempDirs('troupe-crossplay-');

const trainer = troupeCli;

/** Two small Kuhn runs (the default config, tiny): checkpoints at steps 1 and 3 of one run. */
let run = '';
beforeAll(async () => {
  run = await tempDir();
  const config = await tinyConfig(DEFAULT_CONFIG, [
    'max_steps=3',
    'groups_per_step=6',
    'checkpoint_every=3',
    'keep_checkpoints=[1]',
    'train.source.0.group_size=2',
    'trainer.lr=0.05',
  ]);
  await train({ config, out: run });
});

describe('crossplay', () => {
  it('plays every pair in both seats: an antisymmetric payoff matrix with CIs, Elo, and exact NashConv per player', async () => {
    const result = await crossplay({
      checkpoints: [`early=${join(run, 'checkpoint-step-1')}`, join(run, 'checkpoint')],
      opponents: ['uniform', 'equilibrium'],
      hands: 60,
      seed: 3,
    });
    expect(result.env).toBe('kuhn-poker');
    expect(result.players.map((p) => p.label)).toEqual(['early', expect.any(String), 'uniform', 'equilibrium']);
    expect(result.players.map((p) => p.step)).toEqual([1, 3, undefined, undefined]);
    const n = result.players.length;
    for (let i = 0; i < n; i++) {
      expect(result.payoff[i]?.[i]).toBeNull();
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        const cell = result.payoff[i]?.[j];
        // Zero-sum: the column player's payoff against the row player is the negative.
        expect(cell?.mean).toBeCloseTo(-(result.payoff[j]?.[i]?.mean as number), 12);
        expect(cell?.ci95).toBeGreaterThan(0);
        expect((result.winRate[i]?.[j] as number) + (result.winRate[j]?.[i] as number)).toBeCloseTo(1, 12);
      }
    }
    // The evaluator of the env (Kuhn: exact NashConv) runs on every player, fixed tables included.
    expect(result.players[2]?.evaluation.nash_conv).toBeCloseTo(11 / 12, 12);
    expect(result.players[3]?.evaluation.nash_conv).toBeCloseTo(0, 12);
    expect(result.players[0]?.evaluation.nash_conv).toBeGreaterThan(0);
    expect(result.players.reduce((a, p) => a + p.elo, 0) / n).toBeCloseTo(1500, 6);
    const html = crossplayHtml(result);
    expect(html).toContain('<table id="payoff">');
    for (const p of result.players) expect(html).toContain(`<th>${p.label}</th>`);
    expect(html).not.toMatch(/<script|<link|src=/);
  });

  it('is deterministic for a seed', async () => {
    const options = { checkpoints: [join(run, 'checkpoint')], opponents: ['uniform'], hands: 30, seed: 9 };
    const a = (await crossplay(options)) as CrossplayResult;
    const b = (await crossplay(options)) as CrossplayResult;
    expect(b.payoff).toEqual(a.payoff);
  });

  it('fits Bradley–Terry Elo: a player who scores more against everyone rates higher', () => {
    // 0 beats 1 (70 of 100), 1 beats 2 (70 of 100), 0 beats 2 (84 of 100).
    const elo = bradleyTerryElo([
      [0, 70, 84],
      [30, 0, 70],
      [16, 30, 0],
    ]);
    expect(elo[0]).toBeGreaterThan(elo[1] as number);
    expect(elo[1]).toBeGreaterThan(elo[2] as number);
    // Symmetric scores give equal ratings.
    expect(
      bradleyTerryElo([
        [0, 50],
        [50, 0],
      ]).map((x) => Math.round(x)),
    ).toEqual([1500, 1500]);
  });
});

describe('crossplay on another env: the fixed opponents its module declares', () => {
  it("plays a matching-pennies checkpoint against the env's own opponents, and names them for an unknown one", async () => {
    const out = await tempDir();
    const env = resolve(import.meta.dirname, '__fixtures__/pennies-env.ts');
    const config = {
      seed: 1,
      max_steps: 1,
      groups_per_step: 2,
      checkpoint_every: 1,
      train: { source: [{ env, group_size: 2, algorithm: { type: 'rae' } }] },
      policy: { d_model: 8, heads: 2, layers: 1, ffn_mult: 1, max_tokens: 1 },
      trainer: { worker_thread: false },
    };
    await train({ config, out });
    const result = await crossplay({ checkpoints: [`pennies=${join(out, 'checkpoint')}`], hands: 8, seed: 2 });
    expect(result.env).toBe('pennies');
    expect(result.roles).toEqual(['matcher', 'mismatcher']);
    expect(result.players.map((p) => [p.label, p.kind])).toEqual([
      ['pennies', 'checkpoint'],
      ['heads', 'opponent'],
      ['tails', 'opponent'],
    ]);
    // heads vs tails: the matcher never matches, so each wins one seat order: 0 per episode, exactly.
    expect(result.payoff[1]?.[2]).toEqual({ mean: 0, ci95: 0 });
    expect(result.players.every((p) => Object.keys(p.evaluation).length === 0)).toBe(true);
    await expect(crossplay({ checkpoints: [join(out, 'checkpoint')], opponents: ['uniform'], hands: 2 })).rejects.toThrow(
      /--opponent uniform: unknown opponent; env .*pennies-env\.ts declares heads, tails/,
    );
  });
});

describe('pnpm trainer crossplay (CLI)', () => {
  it('lists every option in --help, and refuses bad input with a clear error and exit 2', async () => {
    const help = await trainer(['crossplay', '--help']);
    expect(help.code).toBe(0);
    for (const option of ['--checkpoint', '--opponent', '--hands', '--seed', '--out']) expect(help.stdout).toContain(option);
    const cases: [string[], RegExp][] = [
      [
        ['crossplay', '--checkpoint', join(run, 'checkpoint'), '--opponent', 'random'],
        /--opponent random: unknown opponent; env kuhn-poker declares uniform, equilibrium/,
      ],
      [['crossplay', '--checkpoint', join(run, 'missing'), '--opponent', 'uniform'], /--checkpoint .*missing: no checkpoint/],
      [
        ['crossplay', '--checkpoint', join(run, 'checkpoint'), '--opponent', 'uniform', '--hands', 'ten'],
        /--hands: expected an integer/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await trainer(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('plays one checkpoint against every fixed opponent its env declares when --opponent is absent', async () => {
    const out = await tempDir();
    const result = await trainer(['crossplay', '--checkpoint', `last=${join(run, 'checkpoint')}`, '--hands', '20', '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    const last = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as CrossplayResult;
    expect(last.players.map((p) => [p.label, p.kind])).toEqual([
      ['last', 'checkpoint'],
      ['uniform', 'opponent'],
      ['equilibrium', 'opponent'],
    ]);
    expect(last.players[1]?.evaluation.nash_conv).toBeCloseTo(11 / 12, 12);
    await expect(crossplay({ checkpoints: [join(run, 'checkpoint')], opponents: [], hands: 2 })).rejects.toThrow(
      /at least two players/,
    );
  });

  it('writes crossplay.json and crossplay.html and prints the JSON as its last stdout line', async () => {
    const out = await tempDir();
    const result = await trainer([
      'crossplay',
      '--checkpoint',
      join(run, 'checkpoint'),
      '--opponent',
      'equilibrium',
      '--hands',
      '20',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const last = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as CrossplayResult & { files: string[] };
    expect(last.players.map((p) => p.label)).toEqual([expect.any(String), 'equilibrium']);
    expect(last.files).toEqual([join(out, 'crossplay.json'), join(out, 'crossplay.html')]);
    expect(existsSync(join(out, 'crossplay.html'))).toBe(true);
    const saved = JSON.parse(await readFile(join(out, 'crossplay.json'), 'utf8')) as CrossplayResult;
    expect(saved.payoff).toEqual(last.payoff);
  });
});
