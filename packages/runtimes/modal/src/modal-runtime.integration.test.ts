import { ConfigError, SandboxError } from '@troupe/verifiers';
import { describeSandboxConformance } from '@troupe/verifiers/conformance';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOUBLE_LABEL, ModalDouble } from './__fixtures__/modal-double.ts';
import { createRuntime } from './index.ts';
import { ModalRuntime } from './modal-runtime.ts';

/**
 * The Modal runtime on the official SDK against a loopback Modal API (`__fixtures__/modal-double.ts`:
 * gRPC with the SDK's own generated protobuf codecs; its sandboxes are containers on the test
 * tooling's engine, TROUPE_DOCKER_HOST or TROUPE_PODMAN_HOST). Not run against Modal's service.
 * Without an engine the suite is skipped locally and fails under CI=true.
 */
const socket = (process.env.TROUPE_DOCKER_HOST ?? process.env.TROUPE_PODMAN_HOST)?.replace(/^unix:\/\//, '');
const inCi = process.env.CI === 'true';
const skip =
  socket || inCi ? false : 'neither TROUPE_DOCKER_HOST nor TROUPE_PODMAN_HOST is set (tooling/scripts/podman-engine.sh start)';
const image = 'troupe-busybox:latest';
const tokenId = 'ak-double-token-id';
const tokenSecret = 'as-double-token-secret-never-recorded';
const docker = new Docker({ socketPath: socket ?? '/var/run/docker.sock' });
const double = new ModalDouble({ docker, tokenId, tokenSecret });

// The SDK finds its control plane in its profile (`MODAL_SERVER_URL`, read by `new ModalClient`):
// the test points it at the double; the runtime itself never touches process.env.
beforeAll(async () => {
  if (skip) return;
  await double.start();
  process.env.MODAL_SERVER_URL = double.url;
});
afterAll(async () => {
  if (!skip) await double.stop();
});

const runtime = (extra: Record<string, unknown> = {}) =>
  createRuntime(
    { image, appName: 'troupe-tests', ...extra },
    { env: { MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: tokenSecret } },
  );

describe('engine behind the Modal double', () => {
  it.runIf(inCi)('is running under CI (TROUPE_DOCKER_HOST or TROUPE_PODMAN_HOST names its socket)', () => {
    expect(socket, 'no engine for the Modal double: .ci/run starts docker and podman').toBeTruthy();
  });
});

describeSandboxConformance({
  name: 'modal (loopback gRPC double)',
  skip,
  makeRuntime: () => runtime(),
  sandboxOptions: { image },
  reachesHostLoopback: false,
  inspectLeftovers: async (labels) => {
    const containers = await docker.listContainers({
      all: true,
      filters: { label: Object.entries(labels).map(([name, value]) => `${name}=${value}`) },
    });
    return containers.map((container) => container.Id);
  },
});

describe.skipIf(skip)('ModalRuntime on the SDK against the loopback double', () => {
  it('creates the sandbox with the app, the registry image, resources, lifetime, no network and the labels as tags', async () => {
    const modal = runtime({ lifetimeMs: 120_000 });
    const sandbox = await modal.createSandbox({ cpu: 0.5, memoryMb: 100, labels: { purpose: 'create-test' } });
    const method = (name: string) => double.calls.filter((call) => call.method === name).at(-1)?.request as Record<string, never>;
    expect(method('appGetOrCreate')).toMatchObject({ appName: 'troupe-tests', objectCreationType: 1 });
    expect(method('imageGetOrCreate')).toMatchObject({ image: { dockerfileCommands: [`FROM ${image}`] } });
    expect(method('sandboxCreateV2')).toMatchObject({
      definition: {
        timeoutSecs: 120,
        resources: { milliCpu: 500, memoryMb: 100 },
        networkAccess: { networkAccessType: 2 },
        entrypointArgs: [],
      },
      tags: expect.arrayContaining([{ tagName: 'purpose', tagValue: 'create-test' }]),
    });
    expect(sandbox.runtime).toBe('modal');
    expect(sandbox.id).toMatch(/^sb-/);
    const [container] = await docker.listContainers({ filters: { label: [`${DOUBLE_LABEL}=${sandbox.id}`] } });
    const inspected = await docker.getContainer(container?.Id ?? 'missing').inspect();
    expect(inspected.HostConfig.NetworkMode).toBe('none');
    expect(inspected.HostConfig.Memory).toBe(100 * 1024 * 1024);
    await modal.close();
    expect(double.sandboxes.get(sandbox.id)?.result).toMatchObject({ status: 3 });
  });

  it('sends the token only as call metadata: never in a request body, a command env or an error', async () => {
    const modal = runtime();
    const sandbox = await modal.createSandbox({ env: { PLAIN: 'yes' } });
    const env = await sandbox.exec('env');
    expect(env.stdout).toContain('PLAIN=yes');
    expect(env.stdout).not.toContain(tokenSecret);
    for (const call of double.calls) expect(JSON.stringify(call.request)).not.toContain(tokenSecret);
    const router = double.calls.filter((call) => call.method === 'taskExecStart');
    expect(router.length).toBeGreaterThan(0);
    for (const call of router) expect(JSON.stringify(call.metadata)).not.toContain(tokenSecret);
    expect(double.calls.find((call) => call.method === 'sandboxCreateV2')?.metadata['x-modal-token-secret']).toBe(tokenSecret);
    await modal.close();
  });

  it('fails creation with a SandboxError naming modal when the token is refused, without echoing it', async () => {
    const modal = createRuntime({ image }, { env: { MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: 'as-wrong-secret' } });
    const error = await modal.createSandbox().catch((caught: unknown) => caught);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/modal/);
    expect((error as Error).message).not.toContain('as-wrong-secret');
  });

  it('fails creation with a SandboxError when the image cannot be had', async () => {
    const modal = runtime();
    const error = await modal.createSandbox({ image: 'troupe-no-such-image:never' }).catch((caught: unknown) => caught);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/Image build .* failed/);
    await modal.close();
  });

  it('reports the exit code and output of a command that outlives the exec call, and alive() once terminated', async () => {
    const modal = runtime();
    const sandbox = await modal.createSandbox();
    const result = await sandbox.exec('echo started; (sleep 30 &) ; exit 3');
    expect(result).toMatchObject({ exitCode: 3, stdout: 'started\n' });
    expect(await sandbox.alive()).toBe(true);
    await modal.close();
    expect(await sandbox.alive()).toBe(false);
  });
});

describe('modal runtime options', () => {
  const env = { MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: tokenSecret };

  it('names the bad field', () => {
    expect(() => createRuntime({ cpu: -1 }, { env })).toThrow(/runtime \(modal\)\.cpu/);
    expect(() => createRuntime({ lifetimeMs: 1500 }, { env })).toThrow(/runtime \(modal\)\.lifetimeMs/);
    expect(() => createRuntime({ workdir: 'relative' }, { env })).toThrow(/runtime \(modal\)\.workdir/);
    expect(() => createRuntime({ imagee: 'typo' }, { env })).toThrow(ConfigError);
    expect(() => new ModalRuntime({ apiKey: '', tokenId } as never)).toThrow(/modal\.apiKey/);
  });

  it('reads the token pair from the named variables of the environment it is given, never from process.env', () => {
    expect(() => createRuntime({}, {})).toThrow(/MODAL_TOKEN_SECRET/);
    expect(() => createRuntime({}, { env: { MODAL_TOKEN_SECRET: 'x' } })).toThrow(/MODAL_TOKEN_ID/);
    expect(() => createRuntime({ apiKeyVar: 'MY_SECRET', tokenIdVar: 'MY_ID' }, { env })).toThrow(/MY_SECRET/);
    const made = createRuntime({ apiKeyVar: 'MY_SECRET', tokenIdVar: 'MY_ID' }, { env: { MY_SECRET: 's', MY_ID: 'i' } });
    expect(made.id).toBe('modal');
    expect(() => createRuntime('modal')).toThrow(/options must be a table/);
  });
});
