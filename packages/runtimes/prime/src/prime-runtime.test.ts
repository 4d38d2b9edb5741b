import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from './index.ts';
import { PrimeRuntime } from './prime-runtime.ts';

/**
 * A loopback stand-in for Prime's sandbox REST API in the wire format of Prime's published
 * client: `POST /sandbox` (snake_case request, camelCase `Sandbox` answer), `GET|DELETE
 * /sandbox/{id}` (status PENDING → PROVISIONING → RUNNING), and `POST /sandbox/{id}/command`
 * ({command, working_dir, env} → {stdout, stderr, exit_code}). Its "sandbox" runs each command
 * with `sh -c` on the test host, in its own process group. Not run against the live service.
 */
class FakePrime {
  /** The one key the API accepts. */
  readonly apiKey = 'pit_test_key';
  readonly requests: Array<{ path: string; headers: IncomingMessage['headers']; body: unknown }> = [];
  status = new Map<string, string[]>();
  created = 0;
  server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    this.requests.push({ path: `${request.method} ${path}`, headers: request.headers, body });
    const reply = (status: number, value: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    // Every call carries `Authorization: Bearer <key>` (prime-sandboxes core/client.py:90); a missing
    // or wrong key is a 401 (core/client.py:201-202), in FastAPI's `{detail}` shape.
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) return reply(401, { detail: 'Invalid API key' });
    const sandbox = (id: string, status: string) => ({
      id,
      name: 'troupe',
      dockerImage: 'img',
      cpuCores: 1,
      memoryGB: 2,
      diskSizeGB: 10,
      diskMountPath: '/',
      gpuCount: 0,
      status,
      timeoutMinutes: 60,
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    });
    if (request.method === 'GET' && path === '/api/v1/sandbox') {
      // List (sandbox.py:1051-1063): a page of `SandboxListResponse` (models.py:182-189).
      const perPage = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('per_page') ?? 50);
      const ids = [...this.status.keys()].slice(0, perPage);
      return reply(200, {
        sandboxes: ids.map((id) => sandbox(id, this.status.get(id)?.[0] ?? 'RUNNING')),
        total: this.status.size,
        page: 1,
        perPage,
        hasNext: this.status.size > perPage,
      });
    }
    if (request.method === 'POST' && path === '/api/v1/sandbox') {
      const id = `sbx-${++this.created}`;
      this.status.set(
        id,
        (body as { docker_image: string }).docker_image === 'broken'
          ? ['PENDING', 'ERROR']
          : ['PENDING', 'PROVISIONING', 'RUNNING'],
      );
      return reply(200, sandbox(id, 'PENDING'));
    }
    const match = /^\/api\/v1\/sandbox\/([^/]+)(\/command)?$/.exec(path);
    const id = match?.[1] ?? '';
    const states = this.status.get(id);
    if (!states) return reply(404, { detail: 'Sandbox not found' });
    if (request.method === 'GET') {
      if (states.length > 1) states.shift();
      return reply(200, sandbox(id, states[0] ?? 'RUNNING'));
    }
    if (request.method === 'DELETE') {
      this.status.delete(id);
      return reply(200, { success: true });
    }
    const { command, working_dir, env } = body as { command: string; working_dir: string; env?: Record<string, string> };
    const child = spawn('sh', ['-c', command], { cwd: working_dir, env: { PATH: '/usr/bin:/bin', ...env }, detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('close', (code, signal) => reply(200, { stdout, stderr, exit_code: code ?? (signal === 'SIGKILL' ? 137 : 143) }));
  });
  url = '';
  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/v1`;
  }
}

describe('PrimeRuntime against a loopback Prime API (real wire format, not run against the live service)', () => {
  const fake = new FakePrime();
  let runtime: PrimeRuntime;
  let workdir: string;

  beforeAll(async () => {
    await fake.start();
    workdir = await mkdtemp(join(tmpdir(), 'troupe-prime-fake-'));
    runtime = new PrimeRuntime({ apiKey: 'pit_test_key', apiUrl: fake.url, workdir, pollIntervalMs: 10 });
  });
  afterAll(async () => {
    await runtime.close();
    fake.server.close();
    await rm(workdir, { recursive: true, force: true });
  });

  it('creates a sandbox, polls until RUNNING, and sends no credential env', async () => {
    const sandbox = await runtime.createSandbox({
      image: 'troupe-debian:bookworm',
      env: { PLAIN: 'x', HF_TOKEN: 'secret' },
      cpu: 2,
      memoryMb: 4096,
    });
    const create = fake.requests.find((request) => request.path === 'POST /api/v1/sandbox');
    expect(create?.headers.authorization).toBe('Bearer pit_test_key');
    expect(create?.body).toMatchObject({
      docker_image: 'troupe-debian:bookworm',
      cpu_cores: 2,
      memory_gb: 4,
      environment_vars: { PLAIN: 'x' },
    });
    expect((create?.body as { environment_vars: Record<string, string> } | undefined)?.environment_vars.HF_TOKEN).toBeUndefined();
    expect(fake.requests.filter((request) => request.path === `GET /api/v1/sandbox/${sandbox.id}`).length).toBeGreaterThanOrEqual(
      2,
    );
    expect(await sandbox.alive()).toBe(true);
    await sandbox.stop();
  });

  it('runs commands with separate stdout and stderr, exit codes, env, cwd and stdin', async () => {
    const sandbox = await runtime.createSandbox();
    expect(await sandbox.exec('echo "out $CALL"; echo err >&2; exit 5', { env: { CALL: 'c' } })).toMatchObject({
      exitCode: 5,
      stdout: 'out c\n',
      stderr: 'err\n',
      timedOut: false,
    });
    expect((await sandbox.exec('pwd')).stdout.trim()).toBe(workdir);
    expect((await sandbox.exec('cat', { stdin: 'piped' })).stdout).toBe('piped');
    expect((await sandbox.exec(['printf', '%s', 'a b'])).stdout).toBe('a b');
    await sandbox.stop();
  });

  it('kills a command past its timeout with timeout -s KILL, children included', async () => {
    const sandbox = await runtime.createSandbox();
    const result = await sandbox.exec(`sh -c 'trap "" TERM; sleep 30' & echo $! > ${workdir}/child.pid; wait`, {
      timeoutMs: 1000,
    });
    expect(result).toMatchObject({ timedOut: true, exitCode: 137 });
    const child = Number((await readFile(join(workdir, 'child.pid'), 'utf8')).trim());
    expect(await processGone(child)).toBe(true);
    await sandbox.stop();
  });

  it('round-trips binary files as base64 through commands', async () => {
    const sandbox = await runtime.createSandbox();
    const bytes = new Uint8Array(120_000).map((_, index) => (index * 7) % 256);
    await sandbox.writeFile('deep/data.bin', bytes, { mode: 0o600 });
    expect(Buffer.from(await sandbox.readFile('deep/data.bin')).equals(Buffer.from(bytes))).toBe(true);
    await expect(sandbox.readFile('missing')).rejects.toMatchObject({ name: 'SandboxError' });
    await sandbox.stop();
  });

  it('turns a sandbox that ends in ERROR into a SandboxError and deletes it', async () => {
    await expect(runtime.createSandbox({ image: 'broken' })).rejects.toMatchObject({
      name: 'SandboxError',
      message: expect.stringMatching(/ERROR/),
    });
    expect(fake.requests.some((request) => request.path === `DELETE /api/v1/sandbox/sbx-${fake.created}`)).toBe(true);
    expect(fake.status.has(`sbx-${fake.created}`)).toBe(false);
  });

  it('deletes the sandbox on stop; later commands fail with a SandboxError', async () => {
    const sandbox = await runtime.createSandbox();
    await sandbox.stop();
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('true')).rejects.toMatchObject({ name: 'SandboxError' });
  });
});

/** True once `pid` is gone or a zombie (polls briefly: the kill lands asynchronously). */
async function processGone(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const state = await readFile(`/proc/${pid}/stat`, 'utf8').then(
      (stat) => stat.split(') ')[1]?.[0],
      () => undefined,
    );
    if (state === undefined || state === 'Z') return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describe('prime preflight against the loopback Prime API: the key in its variable, accepted by the API', () => {
  const fake = new FakePrime();
  const fromEnv = (env: Record<string, string>, apiUrl = fake.url) => createRuntime({ apiUrl }, { env });

  beforeAll(() => fake.start());
  afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));

  it('passes with a key the API accepts, after one list call that carries it', async () => {
    await expect(fromEnv({ PRIME_API_KEY: fake.apiKey }).preflight()).resolves.toBeUndefined();
    const list = fake.requests.at(-1);
    expect(list?.path).toBe('GET /api/v1/sandbox');
    expect(list?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
  });

  it('a key the API refuses (401) fails naming PRIME_API_KEY, never the key', async () => {
    const error = (await fromEnv({ PRIME_API_KEY: 'pit_wrong_secret' })
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toMatchObject({ name: 'SandboxError' });
    expect(error.message).toMatch(/refused the key in PRIME_API_KEY \(401\)/);
    expect(error.message).not.toContain('pit_wrong_secret');
  });

  it('a missing key variable fails when the runtime is built, naming the variable', () => {
    expect(() => fromEnv({})).toThrow(/PRIME_API_KEY/);
  });

  it('an API that does not answer fails naming its URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/api/v1`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = (await fromEnv({ PRIME_API_KEY: fake.apiKey }, url)
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain(`${url} does not answer`);
  });
});
