import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { trainKilledAtCheckpoint, troupeCli, twoSeatToml } from './__fixtures__/trainer-cli.ts';
import { crossplay } from './crossplay.ts';

const env = resolve(import.meta.dirname, '__fixtures__/two-sides-env.ts');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A run config of the two-sides env whose seats play the policies `west` and `east`. */
function twoPolicyConfig(): string {
  return twoSeatToml({
    env,
    left: 'west',
    right: 'east',
    checkpointEvery: 2,
    rest: `[policies.west]
d_model = 8
heads = 2
[policies.east]
d_model = 8
heads = 2
[policies.east.trainer]
lr = 0.04
`,
  });
}

const trainCli = (args: string[]) => troupeCli(['train', ...args]);

const readMetrics = (out: string) =>
  readFileSync(join(out, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>);

describe('several trainable policies through troupe train --config', () => {
  it("trains a user module's two roles on two policies, each policy's reward rising on its own task", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-policies-'));
    dirs.push(dir);
    const configPath = join(dir, 'two.toml');
    writeFileSync(configPath, twoPolicyConfig());
    const out = join(dir, 'run');
    const result = await trainCli(['--config', configPath, '--run-dir', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/2 policies \(west: .*; east: .*\)/);
    const metrics = readMetrics(out);
    expect(metrics.map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
    const reward = (m: Record<string, number>, role: string) => m[`train/two-sides/${role}/reward/mean`] as number;
    const [first, last] = [metrics[0] as Record<string, number>, metrics.at(-1) as Record<string, number>];
    // Both seats read the same prompt: one shared policy cannot say "left" to one and "right" to the other.
    for (const role of ['left', 'right']) {
      expect(reward(first, role)).toBeLessThan(0.75);
      expect(reward(last, role)).toBeGreaterThanOrEqual(0.9);
    }
    for (const m of metrics) {
      // Each policy trains on its own seat's traces (4 groups × 4 episodes, one trace each), under its own keys.
      expect(m['batch/west/samples']).toBe(16);
      expect(m['batch/east/samples']).toBe(16);
      expect(m['trainer/west/lr']).toBeCloseTo(0.05, 6);
      expect(m['trainer/east/lr']).toBeCloseTo(0.04, 6);
      expect(m['trainer/west/step']).toBe(m.step);
      expect(m).not.toHaveProperty('trainer/loss');
    }
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')) as { policies: Record<string, unknown> };
    expect(Object.keys(config.policies)).toEqual(['west', 'east']);

    // Cross-play pits the run's two policies against each other, each named as <checkpoint>#<policy>.
    const checkpoint = join(out, 'checkpoint');
    const played = await crossplay({ checkpoints: [`${checkpoint}#west`, `${checkpoint}#east`], hands: 8, seed: 1 });
    expect(played.players.map((p) => p.label)).toEqual(['run#west', 'run#east']);
    await expect(crossplay({ checkpoints: [checkpoint, `${checkpoint}#east`], hands: 8 })).rejects.toThrow(
      /--checkpoint .*: .* holds the policies west, east; name one as .*#<policy>/,
    );
  });

  it('keeps every policy in the checkpoint: a run killed with SIGKILL continues identically on --resume', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-policies-'));
    dirs.push(dir);
    const configPath = join(dir, 'two.toml');
    writeFileSync(configPath, twoPolicyConfig());
    const full = join(dir, 'full');
    expect((await trainCli(['--config', configPath, '--run-dir', full])).code).toBe(0);

    const cut = join(dir, 'cut');
    // Killed, with no chance to clean up, as soon as the checkpoint of step 2 is committed.
    const killed = await trainKilledAtCheckpoint({ args: ['--config', configPath, '--run-dir', cut], out: cut, step: 2 });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    // One checkpoint directory holds both policies, each file listed in its manifest.
    const manifest = JSON.parse(readFileSync(join(cut, 'checkpoint', 'manifest.json'), 'utf8')) as {
      step: number;
      files: Record<string, unknown>;
    };
    expect(manifest.step).toBe(2);
    expect(Object.keys(manifest.files).sort()).toEqual([
      'meta.json',
      'policy-east.meta.json',
      'policy-east.tensors.bin',
      'tensors.bin',
    ]);
    expect(readdirSync(join(cut, 'checkpoints')).some((name) => name.startsWith('step-'))).toBe(true);

    const resumed = await trainCli(['--config', configPath, '--run-dir', cut, '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(existsSync(join(cut, 'report.html'))).toBe(true);
    const strip = (rows: Record<string, number>[]) =>
      rows.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('time/') && !k.endsWith('/gflops'))));
    expect(strip(readMetrics(cut))).toEqual(strip(readMetrics(full)));
  });
});
