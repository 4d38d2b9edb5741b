import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { hostPidsWith, processAlive } from '../testing/process-alive.ts';
import { describeSandboxConformance } from '../testing/sandbox-conformance.ts';
import { createRuntime, LocalRuntime } from './local-runtime.ts';

const conformanceRoot = await mkdtemp(join(tmpdir(), 'troupe-local-conformance-'));

describeSandboxConformance({
  name: 'local',
  makeRuntime: () => new LocalRuntime({ root: conformanceRoot }),
  inspectLeftovers: async () => readdir(conformanceRoot),
});

describe('LocalRuntime', () => {
  let root: string;
  let runtime: LocalRuntime;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'troupe-local-runtime-'));
    runtime = new LocalRuntime({ root, env: { SHARED: 'yes', GITHUB_TOKEN: 'no', MY_SECRET: 'no' } });
  });
  afterAll(async () => {
    await runtime.close();
    await rm(root, { recursive: true, force: true });
    await rm(conformanceRoot, { recursive: true, force: true });
  });

  it('gives each sandbox its own directory with work, home and tmp, and a minimal environment', async () => {
    const sandbox = await runtime.createSandbox();
    const sandboxRoot = join(root, sandbox.id);
    expect(sandbox.workdir).toBe(join(sandboxRoot, 'work'));
    const env = await sandbox.exec('echo "$HOME|$TMPDIR|$SANDBOX_ROOT|$LANG|$SHARED|$GITHUB_TOKEN|$MY_SECRET"');
    expect(env.stdout).toBe(`${sandboxRoot}/home|${sandboxRoot}/tmp|${sandboxRoot}|C.UTF-8|yes||\n`);
    const names = (await sandbox.exec('env')).stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('=')[0]);
    expect(names.filter((name) => /API_KEY|SECRET|TOKEN/i.test(name ?? ''))).toEqual([]);
    await sandbox.stop();
  });

  it('reads absolute paths inside the sandbox root: /tmp/x is <root>/tmp/x, where $TMPDIR points', async () => {
    const sandbox = await runtime.createSandbox();
    await sandbox.exec('echo verdict > "$TMPDIR/verdict.json"');
    expect(Buffer.from(await sandbox.readFile('/tmp/verdict.json')).toString()).toBe('verdict\n');
    await sandbox.writeFile('/work/from-root.txt', 'same place');
    expect(Buffer.from(await sandbox.readFile(join(sandbox.workdir, 'from-root.txt'))).toString()).toBe('same place');
    expect(Buffer.from(await sandbox.readFile('from-root.txt')).toString()).toBe('same place');
    await sandbox.stop();
  });

  it('refuses .. escapes and symlinks that leave the sandbox with a SandboxError naming the path', async () => {
    const sandbox = await runtime.createSandbox();
    const outside = join(root, 'outside.txt');
    await writeFile(outside, 'outside');
    await expect(sandbox.readFile('../../outside.txt')).rejects.toThrow(/path escapes the sandbox: \.\.\/\.\.\/outside\.txt/);
    await expect(sandbox.readFile('/../../../etc/passwd')).rejects.toBeInstanceOf(SandboxError);
    await sandbox.exec(`ln -s ${outside} link; ln -s ${root} dirlink; ln -s inner.txt inner-link; echo in > inner.txt`);
    await expect(sandbox.readFile('link')).rejects.toThrow(/through a symlink: link/);
    await expect(sandbox.writeFile('dirlink/new.txt', 'x')).rejects.toThrow(/through a symlink: dirlink\/new\.txt/);
    await expect(sandbox.upload(outside, 'dirlink/copy.txt')).rejects.toBeInstanceOf(SandboxError);
    await expect(sandbox.download('link', join(root, 'copied.txt'))).rejects.toBeInstanceOf(SandboxError);
    expect(existsSync(join(root, 'new.txt'))).toBe(false);
    expect(existsSync(join(root, 'copy.txt'))).toBe(false);
    expect(Buffer.from(await sandbox.readFile('inner-link')).toString()).toBe('in\n');
    await expect(sandbox.exec('pwd', { cwd: '../..' })).rejects.toBeInstanceOf(SandboxError);
    await sandbox.stop();
  });

  it('kills background processes and removes the directory on stop', async () => {
    const sandbox = await runtime.createSandbox();
    // Found by a marker on its command line: inside a PID namespace `$!` is not a host pid.
    const marker = `bg-${sandbox.id}`;
    await sandbox.exec(`sh -c 'sleep 300; : ${marker}' > /dev/null 2>&1 &`);
    const pid = hostPidsWith(marker)[0] ?? 0;
    expect(pid).toBeGreaterThan(0);
    expect(processAlive(pid)).toBe(true);
    await sandbox.stop();
    for (let attempt = 0; attempt < 50 && processAlive(pid); attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(processAlive(pid)).toBe(false);
    expect(existsSync(join(root, sandbox.id))).toBe(false);
  });

  it('maps a workdir option inside the sandbox root', async () => {
    const sandbox = await runtime.createSandbox({ workdir: '/app' });
    expect(sandbox.workdir).toBe(join(root, sandbox.id, 'app'));
    expect((await sandbox.exec('pwd')).stdout.trim()).toBe(sandbox.workdir);
    await sandbox.stop();
    await expect(runtime.createSandbox({ workdir: '../../escape' })).rejects.toBeInstanceOf(SandboxError);
  });

  it('cuts output past maxOutputBytes and says so', async () => {
    const small = new LocalRuntime({ root, maxOutputBytes: 1000 });
    const sandbox = await small.createSandbox();
    const result = await sandbox.exec('yes | head -c 5000');
    expect(result.stdout.length).toBe(1000);
    expect(result.truncated).toBe(true);
    await small.close();
  });

  it('caps live sandboxes at maxConcurrent: a create waits until one stops', async () => {
    const capped = new LocalRuntime({ root, maxConcurrent: 1 });
    const first = await capped.createSandbox();
    let secondCreated = false;
    const second = capped.createSandbox().then((sandbox) => {
      secondCreated = true;
      return sandbox;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(secondCreated).toBe(false);
    await first.stop();
    const sandbox = await second;
    expect(await sandbox.alive()).toBe(true);
    await capped.close();
  });

  it('sweeps sandboxes whose owning process is gone, and keeps live ones', async () => {
    const sweepRoot = join(root, 'sweep');
    await mkdir(join(sweepRoot, 'local-dead'), { recursive: true });
    await writeFile(join(sweepRoot, 'local-dead.sandbox.json'), JSON.stringify({ pid: 2 ** 22 + 1, host: hostname() }));
    await mkdir(join(sweepRoot, 'local-live'), { recursive: true });
    await writeFile(join(sweepRoot, 'local-live.sandbox.json'), JSON.stringify({ pid: process.pid, host: hostname() }));
    const sweeping = new LocalRuntime({ root: sweepRoot });
    const sandbox = await sweeping.createSandbox();
    expect(existsSync(join(sweepRoot, 'local-dead'))).toBe(false);
    expect(existsSync(join(sweepRoot, 'local-live'))).toBe(true);
    const metadata = JSON.parse(await readFile(join(sweepRoot, `${sandbox.id}.sandbox.json`), 'utf8'));
    expect(metadata.pid).toBe(process.pid);
    await sweeping.close();
  });

  it('sweeps old debris of a create that died half-way (no or empty owner record), and keeps fresh debris', async () => {
    const sweepRoot = join(root, 'debris');
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    await mkdir(join(sweepRoot, 'local-nometa'), { recursive: true });
    await utimes(join(sweepRoot, 'local-nometa'), hourAgo, hourAgo);
    await mkdir(join(sweepRoot, 'local-emptymeta'), { recursive: true });
    await writeFile(join(sweepRoot, 'local-emptymeta.sandbox.json'), '');
    await utimes(join(sweepRoot, 'local-emptymeta.sandbox.json'), hourAgo, hourAgo);
    await mkdir(join(sweepRoot, 'local-fresh'), { recursive: true });
    const sweeping = new LocalRuntime({ root: sweepRoot });
    const sandbox = await sweeping.createSandbox();
    expect(existsSync(join(sweepRoot, 'local-nometa'))).toBe(false);
    expect(existsSync(join(sweepRoot, 'local-emptymeta'))).toBe(false);
    expect(existsSync(join(sweepRoot, 'local-emptymeta.sandbox.json'))).toBe(false);
    expect(existsSync(join(sweepRoot, 'local-fresh'))).toBe(true);
    expect(existsSync(join(sweepRoot, `${sandbox.id}.sandbox.json`))).toBe(true);
    await sweeping.close();
  });

  it('rejects bad options with a ConfigError naming the field', () => {
    expect(() => new LocalRuntime({ maxOutputBytes: -1 })).toThrow(/local\.maxOutputBytes/);
    expect(() => createRuntime({ type: 'docker' as 'local' })).toThrow(ConfigError);
    expect(createRuntime({ root }).id).toBe('local');
  });
});
