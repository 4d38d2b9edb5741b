import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeSandboxConformance } from '@troupe/verifiers/conformance';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerRuntime, RUN_LABEL, SANDBOX_LABEL } from './docker-runtime.ts';

/**
 * These tests need a real engine: `tooling/scripts/docker-engine.sh start` starts one and prints
 * its socket; CI exports it as TROUPE_DOCKER_HOST. Without it the suite is skipped.
 */
const socket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
/** The network tests use busybox `wget`, whatever image the conformance suite runs on. */
const BUSYBOX = 'troupe-busybox:latest';
const image = process.env.TROUPE_DOCKER_IMAGE ?? BUSYBOX;
const skip = socket ? false : 'TROUPE_DOCKER_HOST is not set (start an engine with tooling/scripts/docker-engine.sh start)';
const docker = new Docker({ socketPath: socket ?? '/var/run/docker.sock' });

const leftovers = async (labels: Record<string, string>) => {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: Object.entries(labels).map(([name, value]) => `${name}=${value}`) },
  });
  return containers.map((container) => container.Id);
};

describeSandboxConformance({
  name: 'docker',
  skip,
  makeRuntime: () => new DockerRuntime({ docker, image }),
  sandboxOptions: { image },
  inspectLeftovers: leftovers,
});

describe.skipIf(!socket)('DockerRuntime against the real engine', () => {
  let runtime: DockerRuntime;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    runtime = new DockerRuntime({ docker, image });
    server = createServer((request, response) => response.end(`host saw ${request.method} ${request.url}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await runtime?.close();
    server?.close();
  });

  it('labels its containers, runs them with no network by default, and removes them on stop', async () => {
    const sandbox = await runtime.createSandbox({ labels: { purpose: 'label-test' } });
    const [info] = await docker.listContainers({ filters: { label: [`${RUN_LABEL}=${runtime.runId}`, 'purpose=label-test'] } });
    expect(info?.Labels[SANDBOX_LABEL]).toBe('1');
    expect(info?.HostConfig.NetworkMode).toBe('none');
    const interfaces = await sandbox.exec('ls /sys/class/net');
    expect(interfaces.stdout.trim().split(/\s+/)).toEqual(['lo']);
    await sandbox.stop();
    expect(await leftovers({ [RUN_LABEL]: runtime.runId, purpose: 'label-test' })).toEqual([]);
  });

  it('applies cpu and memory limits', async () => {
    const sandbox = await runtime.createSandbox({ cpu: 0.5, memoryMb: 64 });
    const containerId = (sandbox as unknown as { containerId: string }).containerId;
    const info = await docker.getContainer(containerId).inspect();
    expect(info.HostConfig.NanoCpus).toBe(500_000_000);
    expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
    await sandbox.stop();
  });

  // busybox wget -T segfaults in the static build; the no-network check relies on "connection refused".
  it('reaches a host loopback server from a no-network container through reachHost', async () => {
    const sandbox = await runtime.createSandbox({ image: BUSYBOX });
    const hostUrl = `http://127.0.0.1:${port}/v1/models`;
    const before = await sandbox.exec(`wget -q -O - ${hostUrl}`);
    expect(before.exitCode).not.toBe(0);
    const url = await sandbox.reachHost(hostUrl);
    expect(url).toBe(hostUrl);
    const after = await sandbox.exec(`wget -q -O - ${url}`);
    expect(after.stdout).toBe('host saw GET /v1/models');
    await sandbox.stop();
  });

  it('uses the host network when the sandbox allows network', async () => {
    const sandbox = await runtime.createSandbox({ network: true, image: BUSYBOX });
    const url = await sandbox.reachHost(`http://127.0.0.1:${port}/direct`);
    const result = await sandbox.exec(`wget -q -O - ${url}`);
    expect(result.stdout).toBe('host saw GET /direct');
    await sandbox.stop();
  });

  it('turns a missing image into a SandboxError and keeps no container', async () => {
    const strict = new DockerRuntime({ docker, pull: false, labels: { purpose: 'missing-image' } });
    await expect(strict.createSandbox({ image: 'troupe-does-not-exist:never' })).rejects.toThrow(
      /SandboxError|could not be created/,
    );
    await expect(strict.createSandbox({ image: 'troupe-does-not-exist:never' })).rejects.toMatchObject({ name: 'SandboxError' });
    expect(await leftovers({ purpose: 'missing-image' })).toEqual([]);
  });

  it('reports a sandbox whose container died: alive() false and exec fails with a SandboxError', async () => {
    const sandbox = await runtime.createSandbox();
    const containerId = (sandbox as unknown as { containerId: string }).containerId;
    await docker.getContainer(containerId).kill();
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('echo hi')).rejects.toMatchObject({
      name: 'SandboxError',
      message: expect.stringMatching(/not running/),
    });
    await sandbox.stop();
  });

  it('sweeps containers left by a process that is gone', async () => {
    const orphan = await docker.createContainer({
      Image: image,
      Cmd: ['sleep', '600'],
      Labels: {
        [SANDBOX_LABEL]: '1',
        'troupe.owner-pid': String(2 ** 22 + 7),
        'troupe.owner-host': (await import('node:os')).hostname(),
      },
      HostConfig: { NetworkMode: 'none' },
    });
    const fresh = new DockerRuntime({ docker, image });
    expect(await fresh.sweepLeftovers()).toContain(orphan.id);
    await expect(docker.getContainer(orphan.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
