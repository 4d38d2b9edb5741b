import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { troupeCli } from './__fixtures__/trainer-cli.ts';

const cli = resolve(import.meta.dirname, 'cli.ts');

const trainer = troupeCli;

describe('trainer CLI: errors, exit codes and the run directory', () => {
  it('answers --help with the usage and exit 0', async () => {
    for (const args of [['--help'], ['train', '--help'], ['crossplay', '--help']]) {
      const result = await trainer(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^troupe train — [\s\S]*\nUsage:\n[\s\S]*\nTrain options:\n[\s\S]*\nExit codes:\n/);
      for (const flag of ['--config', '--run-dir', '--resume', '--clean', '--set', '--dry-run', '--time-budget'])
        expect(result.stdout).toContain(flag);
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
    expect(result.stderr).toMatch(/^troupe: max_steps: /);
    expect(result.stderr).not.toMatch(/ZodError|\n\s+at /);
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a bad --time-budget naming the flag, and --dry-run shows a good one in seconds', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const bad = await trainer(['train', '--time-budget', 'soon', '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^troupe: --time-budget: .*"soon"/);
    expect(existsSync(out)).toBe(false);
    const good = await trainer(['train', '--time-budget', '5m', '--dry-run']);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout).maxSeconds).toBe(300);
  });

  it('says which algorithms exist for --algorithm ppo', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const result = await trainer(['train', '--algorithm', 'ppo', '--out', out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^troupe: train\.source\[0\]\.algorithm\.type: unknown algorithm 'ppo'.*rae/);
    expect(result.stderr).not.toMatch(/invalid_union/);
    expect(existsSync(out)).toBe(false);
  });

  it('reads a .toml config as TOML (the field error proves it parsed)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trainer-cli-'));
    writeFileSync(join(dir, 'run.toml'), 'max_steps = 3\n[[train.source]]\nenv = "kuhn-poker"\nratio = -2\n');
    const result = await trainer(['train', '--config', join(dir, 'run.toml'), '--out', join(dir, 'run')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^troupe: train\.source\[0\]\.ratio: /);
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
    expect(result.stderr).toMatch(/^troupe: Unknown option '--nope'[\s\S]*see troupe train --help/);
  });

  it('says a misspelt command is unknown (exit 2) and a missing --config file is a clean exit 2', async () => {
    const misspelt = await trainer(['trian']);
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toMatch(/^troupe: unknown command "trian"/);
    const dir = mkdtempSync(join(tmpdir(), 'trainer-cli-'));
    const missing = await trainer(['train', '--config', join(dir, 'nope.toml'), '--run-dir', join(dir, 'run')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^troupe: --config: file .*nope\.toml does not exist/);
    expect(missing.stderr).not.toMatch(/ENOENT|\n\s+at /);
    expect(existsSync(join(dir, 'run'))).toBe(false);
  });

  it('refuses a --run-dir that holds a run without --resume or --clean, --clean with --resume, and --clean of a folder that holds no run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trainer-cli-'));
    const run = join(dir, 'run');
    mkdirSync(run);
    writeFileSync(join(run, 'metrics.jsonl'), '{"step":1}\n');
    const again = await trainer(['train', '--run-dir', run]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^troupe: --run-dir: .* already holds a run \(--resume continues it; --clean replaces it\)/);
    const both = await trainer(['train', '--out', run, '--resume', '--clean']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^troupe: --clean: refused with --resume/);
    const other = join(dir, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'notes.txt'), 'mine');
    const cleanOther = await trainer(['train', '--run-dir', other, '--clean']);
    expect(cleanOther.code).toBe(2);
    expect(cleanOther.stderr).toMatch(/^troupe: --clean: .* holds no training run/);
    expect(readFileSync(join(other, 'notes.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(join(run, 'metrics.jsonl'), 'utf8')).toBe('{"step":1}\n');
    const resumeNothing = await trainer(['train', '--run-dir', join(dir, 'absent'), '--resume']);
    expect(resumeNothing.code).toBe(2);
    expect(resumeNothing.stderr).toMatch(/^troupe: --resume: .*absent does not exist/);
  });

  it('exits 3 when some episodes failed, saying how many, and names no checkpoint/ with checkpoint_every = 0', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const config = {
      max_steps: 2,
      groups_per_step: 2,
      checkpoint_every: 0,
      train: { source: [{ env: './src/__fixtures__/flaky-color-env.ts', group_size: 8 }] },
      policy: { d_model: 8, heads: 1, layers: 1 },
      trainer: { worker_thread: false },
    };
    const result = await trainer(['train', '--config', JSON.stringify(config), '--run-dir', out]);
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(
      /wrote .*\/run\/\{metrics\.jsonl,report\.html\} \(no checkpoint: checkpoint_every = 0\); \d+ episode\(s\) failed/,
    );
    expect(existsSync(join(out, 'checkpoint'))).toBe(false);
  });

  it('exits 130 on Ctrl-C (the signal to the whole process group, several copies at once) after finishing the step', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const config = {
      max_steps: 100_000,
      groups_per_step: 2,
      checkpoint_every: 1,
      train: { source: [{ env: './src/__fixtures__/say-color-env.ts', group_size: 4 }] },
      policy: { d_model: 8, heads: 1, layers: 1 },
      trainer: { worker_thread: false },
    };
    const child = spawn(
      process.execPath,
      ['--conditions=@troupe/source', '--import', 'tsx', cli, 'train', '--config', JSON.stringify(config), '--run-dir', out],
      {
        cwd: resolve(import.meta.dirname, '..'),
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      // What a terminal does, plus the copies the troupe and troupe-trainer bins pass on.
      if (/step 1\/100000/.test(stdout) && !child.killed) for (let i = 0; i < 3; i++) child.kill('SIGINT');
    });
    const code = await new Promise<number | null>((done) => child.on('close', (exit) => done(exit)));
    expect(code).toBe(130);
    expect(stderr).toMatch(/SIGINT: stopping at the end of this step/);
    expect(stderr).toMatch(/troupe: interrupted after step \d+; --resume continues/);
    expect(existsSync(join(out, 'checkpoint'))).toBe(true);
    const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(1);
  });

  it('exits 4 when every episode of the first step fails, naming the error and the endpoint', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'trainer-cli-')), 'run');
    const sets = [
      'max_steps=2',
      'groups_per_step=2',
      'train.source.0.group_size=2',
      'trainer.worker_thread=false',
      'policy.d_model=8',
      'policy.heads=2',
      'policy.ffn_mult=1',
      'train.source.0.roles.player1={"model":{"base_url":"http://127.0.0.1:9/v1","name":"gone"}}',
    ];
    const result = await trainer(['train', '--out', out, ...sets.flatMap((set) => ['--set', set])]);
    expect(result.code, result.stderr).toBe(4);
    expect(result.stderr).toMatch(
      /^troupe: TrainingStoppedError: every episode of the run's first step \(step 1\) failed .*role player1.*ProviderError.*endpoints: http:\/\/127\.0\.0\.1:9\/v1/m,
    );
  });
});
