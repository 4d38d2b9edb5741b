import { ConfigError } from '@troupe/verifiers';
import { describeSandboxConformance } from '@troupe/verifiers/conformance';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from './index.ts';
import { PODMAN_DEFAULT_SOCKET, PodmanRuntime } from './podman-runtime.ts';

/**
 * These tests drive a real podman (Debian's) through its Docker-compatible API:
 * `tooling/scripts/podman-engine.sh start` starts `podman system service` on a private socket and
 * prints it; CI exports it as TROUPE_PODMAN_HOST. Without it the suite is skipped locally, and
 * fails under CI=true.
 */
const socket = process.env.TROUPE_PODMAN_HOST?.replace(/^unix:\/\//, '');
const image = 'troupe-busybox:latest';
const inCi = process.env.CI === 'true';
const skip =
  socket || inCi ? false : 'TROUPE_PODMAN_HOST is not set (start an engine with tooling/scripts/podman-engine.sh start)';
const docker = new Docker({ socketPath: socket ?? PODMAN_DEFAULT_SOCKET });

const leftovers = async (labels: Record<string, string>) => {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: Object.entries(labels).map(([name, value]) => `${name}=${value}`) },
  });
  return containers.map((container) => container.Id);
};

describe('podman engine for the podman runtime tests', () => {
  it.runIf(inCi)('is running under CI (TROUPE_PODMAN_HOST names its socket)', () => {
    expect(socket, 'TROUPE_PODMAN_HOST is not set: .ci/run starts podman with tooling/scripts/podman-engine.sh').toBeTruthy();
  });
});

describeSandboxConformance({
  name: 'podman',
  skip,
  makeRuntime: () => new PodmanRuntime({ docker, image }),
  sandboxOptions: { image },
  inspectLeftovers: leftovers,
});

describe.skipIf(skip)('PodmanRuntime against a real podman', () => {
  const runtime = new PodmanRuntime({ docker, image });
  afterAll(() => runtime.close());

  it('talks to podman itself, not a Docker engine', async () => {
    const version = (await docker.version()) as { Components?: { Name: string }[] };
    expect(version.Components?.map((component) => component.Name)).toContain('Podman Engine');
  });

  it('names its sandboxes podman, applies cpu and memory limits, and runs with no network', async () => {
    const sandbox = await runtime.createSandbox({ cpu: 0.5, memoryMb: 64, labels: { purpose: 'podman-limits' } });
    expect(sandbox.runtime).toBe('podman');
    expect(sandbox.id).toMatch(/^podman-[0-9a-f]{12}$/);
    const [info] = await docker.listContainers({ filters: { label: ['purpose=podman-limits'] } });
    const inspected = await docker.getContainer(info?.Id ?? 'missing').inspect();
    expect(inspected.HostConfig.Memory).toBe(64 * 1024 * 1024);
    expect(inspected.HostConfig.NanoCpus).toBe(500_000_000);
    expect((await sandbox.exec('ls /sys/class/net')).stdout.trim().split(/\s+/)).toEqual(['lo']);
    await sandbox.stop();
    expect(await leftovers({ purpose: 'podman-limits' })).toEqual([]);
  });
});

describe('podman runtime options', () => {
  it('names the bad field with the podman prefix', () => {
    expect(() => createRuntime({ image: 'x', memoryMb: -1 })).toThrow(/runtime \(podman\)\.memoryMb/);
    expect(() => new PodmanRuntime({ socketPath: '' })).toThrow(/podman\.socketPath/);
    expect(() => createRuntime({ imagee: 'typo' })).toThrow(ConfigError);
    expect(() => createRuntime('podman')).toThrow(/options must be a table/);
  });

  it('refuses an egress block list, naming the podman field', () => {
    expect(() => new PodmanRuntime({ egress: { block: ['example.com:443'] } } as never)).toThrow(/podman\.egress\.block/);
  });

  it('defaults to the rootful podman socket', () => {
    const runtime = new PodmanRuntime();
    expect(runtime.id).toBe('podman');
    expect((runtime.docker.modem as { socketPath?: string }).socketPath).toBe(PODMAN_DEFAULT_SOCKET);
  });
});
