import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const cli = resolve(import.meta.dirname, 'cli.ts');

function trainer(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: resolve(import.meta.dirname, '..'),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr })));
}

describe('trainer CLI errors (issue 22 items 2 and 8)', () => {
  it('answers --help with the usage and exit 0', async () => {
    for (const args of [['--help'], ['train', '--help'], ['eval', '-h']]) {
      const result = await trainer(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('usage: pnpm trainer');
    }
  });

  it('names the field of a bad inline config, prints no stack and creates no out directory', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer(['train', '--config', '{"env":"single-agent"}', '--out', out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: env: /);
    expect(result.stderr).not.toMatch(/ZodError|\n\s+at /);
    expect(existsSync(out)).toBe(false);
  });

  it('says which algorithms exist for --algorithm ppo', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer(['train', '--algorithm', 'ppo', '--out', out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: algorithm\.type: .*'rae'/);
    expect(result.stderr).not.toMatch(/invalid_union/);
    expect(existsSync(out)).toBe(false);
  });

  it('reads a .toml config as TOML (the field error proves it parsed)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trainer-cli-'));
    writeFileSync(join(dir, 'run.toml'), 'env = "single-agent"\n[algorithm]\ntype = "rae"\n');
    const result = await trainer(['train', '--config', join(dir, 'run.toml'), '--out', join(dir, 'run')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^trainer: env: Invalid input: expected "kuhn-poker"/);
    expect(existsSync(join(dir, 'run'))).toBe(false);
  });

  it('rejects an unknown flag with exit 2 and the usage', async () => {
    const result = await trainer(['train', '--nope']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Unknown option '--nope'[\s\S]*usage: pnpm trainer/);
  });
});
