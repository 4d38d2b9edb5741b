import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { processAlive } from '@troupe/verifiers/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { exitCodeOf, KubernetesRuntime } from './kubernetes-runtime.ts';

/**
 * A loopback API server speaking the real Kubernetes wire format: pods over REST
 * (`/api/v1/namespaces/{ns}/pods`), and exec as a websocket upgrade of
 * `.../pods/{name}/exec?command=…&stdin=…` with the `v5.channel.k8s.io` channel protocol (first
 * byte of each binary message: 0 stdin, 1 stdout, 2 stderr, 3 status as a `V1Status` JSON,
 * 255 close-stream). Its "kubelet" runs the exec'd argv on the test host, each in its own process
 * group, the way runc runs container execs. Not run against a live cluster.
 */
class FakeApiServer {
  /** The one bearer token the API server authenticates. */
  readonly token = 'k8s-test-token';
  readonly requests: Array<{ path: string; headers: IncomingMessage['headers']; body: unknown }> = [];
  readonly pods = new Map<string, V1Pod & { polls: number }>();
  failImage = 'bad/image:none';
  server: Server = createServer((request, response) => void this.handle(request, response));
  private readonly sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false),
  });
  url = '';

  async start(): Promise<void> {
    this.server.on('upgrade', (request, socket, head) => {
      this.requests.push({
        path: `WS ${new URL(request.url ?? '/', 'http://x').pathname}`,
        headers: request.headers,
        body: undefined,
      });
      if (request.headers.authorization !== `Bearer ${this.token}`) {
        socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      this.sockets.handleUpgrade(request, socket, head, (ws) => this.exec(request, ws));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private json(response: ServerResponse, status: number, body: unknown): void {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? '/', this.url);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    this.requests.push({ path: `${request.method} ${url.pathname}`, headers: request.headers, body });
    // Credentials the API server cannot authenticate are a 401 `Unauthorized` Status (kubernetes
    // staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go:51-55,74-84).
    if (request.headers.authorization !== `Bearer ${this.token}`)
      return this.json(response, 401, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      });
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match)
      return this.json(response, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound' });
    const [, namespace, name] = match;
    if (request.method === 'POST' && !name) {
      const pod = { ...(body as V1Pod), status: { phase: 'Pending' }, polls: 0 };
      this.pods.set(pod.metadata?.name ?? '', pod);
      return this.json(response, 201, { ...pod, polls: undefined });
    }
    if (request.method === 'GET' && !name) {
      const selector = (url.searchParams.get('labelSelector') ?? '')
        .split(',')
        .filter(Boolean)
        .map((pair) => pair.split('='));
      const items = [...this.pods.values()].filter((pod) =>
        selector.every(([key, value]) => pod.metadata?.labels?.[key ?? ''] === value),
      );
      return this.json(response, 200, { apiVersion: 'v1', kind: 'PodList', metadata: {}, items });
    }
    const pod = this.pods.get(name ?? '');
    if (!pod)
      return this.json(response, 404, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: `pods "${name}" not found`,
        reason: 'NotFound',
        code: 404,
      });
    if (request.method === 'GET') {
      pod.polls++;
      if (pod.spec?.containers[0]?.image === this.failImage) {
        pod.status = {
          phase: 'Pending',
          containerStatuses: [
            {
              name: 'sandbox',
              image: this.failImage,
              imageID: '',
              ready: false,
              restartCount: 0,
              state: { waiting: { reason: 'ErrImagePull', message: 'pull access denied' } },
            },
          ],
        };
      } else if (pod.polls >= 2) {
        pod.status = { phase: 'Running' };
      }
      return this.json(response, 200, { ...pod, metadata: { ...pod.metadata, namespace } });
    }
    if (request.method === 'DELETE') {
      this.pods.delete(name ?? '');
      return this.json(response, 200, { ...pod, polls: undefined });
    }
    this.json(response, 405, {});
  }

  private exec(request: IncomingMessage, ws: import('ws').WebSocket): void {
    const url = new URL(request.url ?? '/', 'http://x');
    const argv = url.searchParams.getAll('command');
    const withStdin = url.searchParams.get('stdin') === 'true';
    const child = spawn(argv[0] ?? 'false', argv.slice(1), {
      detached: true,
      stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const send = (channel: number, data: Buffer) => ws.send(Buffer.concat([Buffer.from([channel]), data]));
    child.stdout?.on('data', (chunk: Buffer) => send(1, chunk));
    child.stderr?.on('data', (chunk: Buffer) => send(2, chunk));
    ws.on('message', (message: Buffer) => {
      if (message[0] === 0) child.stdin?.write(message.subarray(1));
      if (message[0] === 255 && message[1] === 0) child.stdin?.end();
    });
    child.on('close', (code, signal) => {
      const exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : 15);
      const status =
        exitCode === 0
          ? { metadata: {}, status: 'Success' }
          : {
              metadata: {},
              status: 'Failure',
              message: `command terminated with non-zero exit code: exit status ${exitCode}`,
              reason: 'NonZeroExitCode',
              details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
            };
      send(3, Buffer.from(JSON.stringify(status)));
      ws.close();
    });
  }
}

describe('KubernetesRuntime against a loopback API server (real wire format, not run against a live cluster)', () => {
  const fake = new FakeApiServer();
  let runtime: KubernetesRuntime;
  let workdir: string;

  beforeAll(async () => {
    await fake.start();
    workdir = await mkdtemp(join(tmpdir(), 'troupe-k8s-fake-'));
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server: fake.url, skipTLSVerify: true }],
      users: [{ name: 'tester', token: 'k8s-test-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'tester' }],
      currentContext: 'fake',
    });
    runtime = new KubernetesRuntime({
      kubeConfig,
      namespace: 'agents',
      image: 'troupe-debian:bookworm',
      workdir,
      labels: { team: 'rl' },
    });
  });
  afterAll(async () => {
    await runtime.close();
    fake.server.close();
    await rm(workdir, { recursive: true, force: true });
  });

  it('creates a labelled pod with limits and no service-account token, and waits until it runs', async () => {
    const sandbox = await runtime.createSandbox({ cpu: 0.5, memoryMb: 256, labels: { run: 'r1' } });
    const create = fake.requests.find((request) => request.path === 'POST /api/v1/namespaces/agents/pods');
    expect(create?.headers.authorization).toBe('Bearer k8s-test-token');
    expect(create?.body).toMatchObject({
      metadata: { labels: { 'troupe.sandbox': '1', 'troupe.run': runtime.runId, team: 'rl', run: 'r1' } },
      spec: {
        automountServiceAccountToken: false,
        restartPolicy: 'Never',
        containers: [
          { name: 'sandbox', image: 'troupe-debian:bookworm', resources: { limits: { cpu: '0.5', memory: '256Mi' } } },
        ],
      },
    });
    expect(fake.pods.get(sandbox.id)?.polls).toBeGreaterThanOrEqual(2);
    expect(await sandbox.alive()).toBe(true);
    await sandbox.stop();
  });

  it('execs over the websocket channel protocol: stdout, stderr, exit code, env, cwd and stdin', async () => {
    const sandbox = await runtime.createSandbox({ env: { PLAIN: 'p', AWS_SECRET_ACCESS_KEY: 'no' } });
    const result = await sandbox.exec('echo "out $PLAIN|$AWS_SECRET_ACCESS_KEY|$CALL"; echo err >&2; exit 7', {
      env: { CALL: 'c' },
    });
    expect(result).toMatchObject({ exitCode: 7, stdout: 'out p||c\n', stderr: 'err\n', timedOut: false });
    expect((await sandbox.exec('pwd')).stdout.trim()).toBe(workdir);
    expect((await sandbox.exec('cat', { stdin: 'from stdin' })).stdout).toBe('from stdin');
    expect(fake.requests.some((request) => request.path === `WS /api/v1/namespaces/agents/pods/${sandbox.id}/exec`)).toBe(true);
    await sandbox.stop();
  });

  it('kills the exec process group on timeout through a second exec', async () => {
    const sandbox = await runtime.createSandbox();
    const result = await sandbox.exec(`sh -c 'trap "" TERM; sleep 60' & echo $! > ${workdir}/child.pid; wait`, {
      timeoutMs: 500,
    });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).not.toBe(0);
    const child = Number((await readFile(join(workdir, 'child.pid'), 'utf8')).trim());
    // Killed means gone or a zombie (its new parent may never reap it); up to 5 s on a loaded machine.
    let alive = true;
    for (let attempt = 0; attempt < 100 && alive; attempt++) {
      alive = processAlive(child);
      if (alive) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(alive).toBe(false);
    await sandbox.stop();
  });

  it('moves files as tar over exec: binary round trip, directory upload and download', async () => {
    const sandbox = await runtime.createSandbox();
    const bytes = Uint8Array.from({ length: 256 }, (_, index) => index);
    await sandbox.writeFile('nested/data.bin', bytes, { mode: 0o600 });
    expect(Buffer.from(await sandbox.readFile('nested/data.bin')).equals(Buffer.from(bytes))).toBe(true);
    await expect(sandbox.readFile('missing.txt')).rejects.toMatchObject({ name: 'SandboxError' });
    const source = await mkdtemp(join(tmpdir(), 'troupe-k8s-upload-'));
    await mkdir(join(source, 'sub'));
    await writeFile(join(source, 'sub', 'b.txt'), 'bee');
    await sandbox.upload(source, 'up');
    expect((await sandbox.exec('cat up/sub/b.txt')).stdout).toBe('bee');
    const target = join(source, 'back');
    await sandbox.download('up', target);
    expect(await readFile(join(target, 'sub', 'b.txt'), 'utf8')).toBe('bee');
    await rm(source, { recursive: true, force: true });
    await sandbox.stop();
  });

  it('deletes the pod on stop; alive() is false and commands fail with a SandboxError', async () => {
    const sandbox = await runtime.createSandbox();
    await sandbox.stop();
    expect(fake.pods.has(sandbox.id)).toBe(false);
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('echo hi')).rejects.toMatchObject({ name: 'SandboxError' });
  });

  it('turns an image that cannot be pulled into a SandboxError and deletes the pod', async () => {
    await expect(runtime.createSandbox({ image: fake.failImage })).rejects.toMatchObject({
      name: 'SandboxError',
      message: expect.stringMatching(/ErrImagePull/),
    });
    expect([...fake.pods.values()].some((pod) => pod.spec?.containers[0]?.image === fake.failImage)).toBe(false);
  });

  it('sweeps pods by label', async () => {
    const sandbox = await runtime.createSandbox();
    expect(await runtime.sweep({ 'troupe.run': runtime.runId })).toContain(sandbox.id);
    expect(fake.pods.size).toBe(0);
    expect(existsSync(workdir)).toBe(true);
  });

  it('reads the exit code from the V1Status the API server sends', () => {
    expect(exitCodeOf({ status: 'Success' })).toBe(0);
    expect(
      exitCodeOf({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '42' }] } }),
    ).toBe(42);
    expect(exitCodeOf({ status: 'Failure', reason: 'InternalError' })).toBe(1);
  });
});

describe('kubernetes preflight against the loopback API server: the kubeconfig credentials, accepted', () => {
  const fake = new FakeApiServer();
  const runtimeWith = (token: string, server = fake.url) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server, skipTLSVerify: true }],
      users: [{ name: 'tester', token }],
      contexts: [{ name: 'fake-ctx', cluster: 'fake', user: 'tester' }],
      currentContext: 'fake-ctx',
    });
    return new KubernetesRuntime({ kubeConfig, namespace: 'agents', image: 'troupe-debian:bookworm' });
  };

  beforeAll(() => fake.start());
  afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));

  it('passes with a token the API server authenticates, after one list call in the namespace', async () => {
    await expect(runtimeWith(fake.token).preflight()).resolves.toBeUndefined();
    expect(fake.requests.at(-1)?.path).toBe('GET /api/v1/namespaces/agents/pods');
  });

  it('a token the API server refuses (401) fails naming the kubeconfig user and context, never the token', async () => {
    const error = (await runtimeWith('k8s-wrong-token')
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toMatchObject({ name: 'SandboxError' });
    expect(error.message).toContain(`${fake.url} refused the credentials of kubeconfig user tester (context fake-ctx) (401)`);
    expect(error.message).not.toContain('k8s-wrong-token');
  });

  it('an API server that does not answer fails naming its URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = (await runtimeWith(fake.token, url)
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain(`${url} does not answer`);
  });
});
