import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');
const fixtureEnv = join(import.meta.dirname, '__fixtures__/debug-env.ts');

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function troupe(args: string[]): { child: ChildProcess; output: () => string; done: Promise<Finished> } {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<Finished>((res) => child.on('close', (code) => res({ code, stdout, stderr })));
  return { child, output: () => stdout, done };
}

const debug = (args: string[]) => troupe(['debug', ...args]).done;

/** A fresh folder for the fixture's solver sandboxes (`--set env.solver.runtime.root=…`). */
function sandboxRoot(): { dir: string; flag: string[] } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'troupe-debug-')));
  return { dir, flag: ['--set', `env.solver.runtime.root=${dir}`] };
}

/** How many processes run `sleep <seconds>`. */
function sleepers(seconds: string): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${seconds}\0`) count++;
    } catch {
      // the process exited while we looked
    }
  }
  return count;
}

async function until(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('troupe debug', () => {
  it('--help shows every option', async () => {
    const result = await debug(['--help']);
    expect(result.code).toBe(0);
    for (const option of [
      '--env',
      '--task',
      '--config',
      '--taskset',
      '--role',
      '--harness',
      '--runtime',
      '--set',
      '--script',
      '--timeout',
      '--help',
    ]) {
      expect(result.stdout).toContain(option);
    }
    expect((await troupe(['--help']).done).stdout).toContain('troupe debug --env');
  });

  it("runs the command in the task's sandbox after the task's setup, streams its output, exits with its code, and removes the sandbox", async () => {
    const { dir, flag } = sandboxRoot();
    const result = await debug([
      '--env',
      fixtureEnv,
      '--task',
      '1',
      ...flag,
      '--',
      'cat setup.txt; echo "root=$SANDBOX_ROOT"; echo "pwd=$(pwd)"; echo to-stderr >&2; exit 7',
    ]);
    expect(result.stderr).toContain('to-stderr');
    expect(result.code).toBe(7);
    expect(result.stdout).toContain('set up task one');
    const sandbox = result.stdout.match(/root=(.*)/)?.[1] ?? '';
    expect(sandbox.startsWith(`${dir}/`)).toBe(true);
    expect(result.stdout).toContain(`pwd=${sandbox}/work`);
    expect(existsSync(sandbox)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('runs several words as an argv, without a shell', async () => {
    const { flag } = sandboxRoot();
    const result = await debug(['--env', fixtureEnv, '--task', '0', ...flag, '--', 'printf', '%s|', 'a b', '$HOME']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('a b|$HOME|');
  });

  it("takes the env, roles and runtimes from an eval config, and boots the --role's runtime", async () => {
    const solver = sandboxRoot();
    const judge = sandboxRoot();
    const configDir = mkdtempSync(join(tmpdir(), 'troupe-debug-config-'));
    const config = join(configDir, 'eval.toml');
    writeFileSync(
      config,
      `model = "m"\n[env]\nid = "${fixtureEnv}"\n[env.solver.runtime]\nid = "local"\nroot = "${solver.dir}"\n[env.judge.runtime]\nid = "local"\nroot = "${judge.dir}"\n`,
    );
    const asJudge = await debug([
      '-f',
      config,
      '--task',
      '2',
      '--role',
      'judge',
      '--',
      'cat setup.txt; echo "root=$SANDBOX_ROOT"',
    ]);
    expect(asJudge.code).toBe(0);
    expect(asJudge.stdout).toContain('set up task two');
    expect(asJudge.stdout).toContain(`root=${judge.dir}/`);
    const asSolver = await debug(['-f', config, '--task', '2', '--', 'echo "root=$SANDBOX_ROOT"']);
    expect(asSolver.stdout).toContain(`root=${solver.dir}/`);
    expect([...readdirSync(solver.dir), ...readdirSync(judge.dir)]).toEqual([]);
  });

  it('runs a script file with its arguments (with or without #!)', async () => {
    const { flag } = sandboxRoot();
    const dir = mkdtempSync(join(tmpdir(), 'troupe-debug-script-'));
    writeFileSync(join(dir, 'with-shebang.sh'), '#!/bin/sh\necho "script $1 $2 in $(pwd)"\nexit 3\n');
    writeFileSync(join(dir, 'plain.sh'), 'echo "plain $1"\n');
    const withShebang = await debug([
      '--env',
      fixtureEnv,
      '--task',
      '0',
      ...flag,
      '--script',
      join(dir, 'with-shebang.sh'),
      '--',
      'a',
      'b',
    ]);
    expect(withShebang.code).toBe(3);
    expect(withShebang.stdout).toMatch(/^script a b in \/.*\/work\n$/);
    const plain = await debug(['--env', fixtureEnv, '--task', '0', ...flag, '--script', join(dir, 'plain.sh'), '--', 'x']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toBe('plain x\n');
  });

  it('on SIGINT kills the command, tears the sandbox down and exits 130', async () => {
    const { dir, flag } = sandboxRoot();
    const started = Date.now();
    // A sleep no other process runs, found in /proc by its argument (PIDs differ inside a PID namespace).
    const seconds = `${60 + Math.floor(Math.random() * 1000)}.5`;
    const run = troupe([
      'debug',
      '--env',
      fixtureEnv,
      '--task',
      '0',
      ...flag,
      '--',
      `echo "root=$SANDBOX_ROOT"; sleep ${seconds}`,
    ]);
    await until(() => /root=\S+/.test(run.output()));
    await until(() => sleepers(seconds) > 0);
    const sandbox = run.output().match(/root=(\S+)/)?.[1] ?? '';
    expect(existsSync(sandbox)).toBe(true);
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(existsSync(sandbox)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
    expect(sleepers(seconds)).toBe(0);
  });

  it('--timeout kills a command that runs too long (exit 124)', async () => {
    const { flag } = sandboxRoot();
    const result = await debug(['--env', fixtureEnv, '--task', '0', ...flag, '--timeout', '0.5', '--', 'sleep 30']);
    expect(result.code).toBe(124);
    expect(result.stderr).toContain('--timeout');
  });

  it('exits 1 naming the error when the task setup fails, and leaves no sandbox', async () => {
    const { dir, flag } = sandboxRoot();
    const result = await debug(['--env', fixtureEnv, '--task', '3', ...flag, '--', 'true']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/could not boot solver's local sandbox for task 3: .*the fixture setup fails for task 3/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('boots a built-in env by id (single-agent on the arithmetic taskset)', async () => {
    const result = await debug(['--env', 'single-agent', '--task', '4', '--', 'echo "in $SANDBOX_ROOT"']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^in \/.+/);
  });

  it.each([
    [['--env', 'no-such-env', '--task', '0', '--', 'true'], /no-such-env/],
    [['--env', fixtureEnv, '--task', '4', '--', 'true'], /--task 4: taskset debug-fixture-tasks has 4 tasks \(indexes 0 to 3\)/],
    [['--env', fixtureEnv, '--task', 'first', '--', 'true'], /--task must be a task index/],
    [['--env', fixtureEnv, '--', 'true'], /--task I is required/],
    [['--env', fixtureEnv, '--task', '0'], /no command/],
    [['--env', fixtureEnv, '--task', '0', 'ls'], /unexpected "ls" before --/],
    [['--env', fixtureEnv, '--task', '0', '--role', 'critic', '--', 'true'], /--role critic: .*roles: solver, judge/],
    [['--env', fixtureEnv, '--task', '0', '--script', '/no/such/script.sh'], /--script \/no\/such\/script\.sh: cannot read it/],
    [['--env', fixtureEnv, '--task', '0', '--runtime', 'no-such-runtime', '--', 'true'], /no-such-runtime/],
    [['--env', fixtureEnv, '--task', '0', '--bogus', '--', 'true'], /--bogus/],
  ])('refuses bad input %j with exit 2, naming it', async (args, message) => {
    const result = await debug(args);
    expect(result.stderr).toMatch(message);
    expect(result.code).toBe(2);
  });
});
