import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type NodeProcessResult, runNode } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';

const cli = resolve(import.meta.dirname, 'cli.ts');

function trainer(args: string[]): Promise<NodeProcessResult> {
  return runNode(['--conditions=@troupe/source', '--import', 'tsx', cli, ...args], { cwd: resolve(import.meta.dirname, '..') });
}

describe('trainer CLI errors', () => {
  it('answers --help with the usage and exit 0', async () => {
    for (const args of [['--help'], ['train', '--help'], ['eval', '-h']]) {
      const result = await trainer(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('usage: pnpm trainer');
    }
  });

  it('names the field of a bad inline config, prints no stack and creates no out directory', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer([
      'train',
      '--config',
      '{"max_steps":-1,"train":{"source":[{"env":"kuhn-poker"}]}}',
      '--out',
      out,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: maxSteps: /);
    expect(result.stderr).not.toMatch(/ZodError|\n\s+at /);
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a bad --time-budget naming the flag, and --dry-run shows a good one in seconds', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const bad = await trainer(['train', '--time-budget', 'soon', '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^trainer: --time-budget: .*"soon"/);
    expect(existsSync(out)).toBe(false);
    const good = await trainer(['train', '--time-budget', '5m', '--dry-run']);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout).maxSeconds).toBe(300);
  });

  it('says which algorithms exist for --algorithm ppo', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer(['train', '--algorithm', 'ppo', '--out', out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: train\.source\[0\]\.algorithm\.type: unknown algorithm 'ppo'.*rae/);
    expect(result.stderr).not.toMatch(/invalid_union/);
    expect(existsSync(out)).toBe(false);
  });

  it('reads a .toml config as TOML (the field error proves it parsed)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trainer-cli-'));
    writeFileSync(join(dir, 'run.toml'), 'max_steps = 3\n[[train.source]]\nenv = "kuhn-poker"\nratio = -2\n');
    const result = await trainer(['train', '--config', join(dir, 'run.toml'), '--out', join(dir, 'run')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: train\.source\[0\]\.ratio: /);
    expect(existsSync(join(dir, 'run'))).toBe(false);
  });

  it('--dry-run prints the resolved config (defaults filled, --set applied) and trains nothing', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer([
      'train',
      '--dry-run',
      '--set',
      'max_steps=7',
      '--set',
      'train.source.0.group_size=3',
      '--out',
      out,
    ]);
    expect(result.code).toBe(0);
    const config = JSON.parse(result.stdout) as {
      maxSteps: number;
      train: { source: { env: string; groupSize: number }[] };
      policy: { vocabSample: number };
    };
    expect(config.maxSteps).toBe(7);
    expect(config.train.source[0]).toMatchObject({ env: 'kuhn-poker', groupSize: 3 });
    expect(config.policy.vocabSample).toBe(1000);
    expect(existsSync(out)).toBe(false);
  });

  it('rejects an unknown flag with exit 2 and the usage', async () => {
    const result = await trainer(['train', '--nope']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Unknown option '--nope'[\s\S]*usage: pnpm trainer/);
  });
});
