import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2BRuntime } from './e2b-runtime.ts';
import { createRuntime } from './index.ts';

/**
 * A loopback stand-in for E2B speaking the real wire formats the `e2b` SDK uses (read from its
 * sources): the control plane's REST API (`POST /v2/sandboxes`, `DELETE /sandboxes/{id}`), and
 * envd's Connect-RPC `process.Process/*` (streaming responses as `application/connect+json`
 * envelopes: 1 flag byte, 4-byte big-endian length, JSON) plus its `/files` REST API.
 * Not run against the live service.
 */
interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

const envelope = (flags: number, message: unknown) => {
  const json = Buffer.from(JSON.stringify(message));
  const header = Buffer.alloc(5);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(json.length, 1);
  return Buffer.concat([header, json]);
};

const readBody = async (request: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

class FakeE2B {
  readonly requests: Recorded[] = [];
  /** The one key the control plane accepts. */
  readonly apiKey = 'e2b_test_key';
  readonly files = new Map<string, Buffer>();
  private readonly waiting = new Map<number, (signal: string) => void>();
  private nextPid = 100;
  server: Server = createServer((request, response) => void this.handle(request, response));
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    const raw = await readBody(request);
    const contentType = request.headers['content-type'] ?? '';
    let body: unknown = raw.toString('utf8');
    if (contentType.includes('application/connect+json')) body = JSON.parse(raw.subarray(5, 5 + raw.readUInt32BE(1)).toString());
    else if (contentType.includes('application/json') && raw.length > 0) body = JSON.parse(raw.toString());
    this.requests.push({ path: `${request.method} ${url.pathname}`, headers: request.headers, body });

    // The control plane authenticates every call by `X-API-KEY` (js-sdk src/api/index.ts:118) and
    // answers a missing or wrong key 401 `{code, message}` (the SDK's AuthenticationError, :40).
    const controlPlane = url.pathname.startsWith('/v2/sandboxes') || url.pathname.startsWith('/sandboxes/');
    if (controlPlane && request.headers['x-api-key'] !== this.apiKey) {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ code: 401, message: 'Invalid API key' }));
      return;
    }
    if (request.method === 'GET' && url.pathname === '/v2/sandboxes') {
      // List (sandboxApi.ts:1869): the sandboxes, at most `limit`, newest first.
      response.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    } else if (request.method === 'POST' && url.pathname === '/v2/sandboxes') {
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          sandboxID: 'sbx-1',
          templateID: (body as { templateID: string }).templateID,
          clientID: 'client',
          envdVersion: '0.5.0',
          envdAccessToken: 'envd-token',
        }),
      );
    } else if (request.method === 'DELETE' && url.pathname.startsWith('/sandboxes/')) {
      response.writeHead(204).end();
    } else if (url.pathname === '/health') {
      response.writeHead(204).end();
    } else if (url.pathname === '/process.Process/Start') {
      await this.startProcess(body as { process: { args: string[] } }, response);
    } else if (url.pathname === '/process.Process/SendSignal') {
      const { process, signal } = body as { process: { pid: number }; signal: string };
      this.waiting.get(process.pid)?.(signal);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } else if (url.pathname === '/files' && request.method === 'GET') {
      const file = this.files.get(url.searchParams.get('path') ?? '');
      if (!file) {
        response
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ code: 404, message: 'file not found' }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.length }).end(file);
    } else if (url.pathname === '/files' && request.method === 'POST') {
      const path = url.searchParams.get('path') ?? '';
      const form = await new Request('http://fixture/', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: raw,
      }).formData();
      const file = form.get('file') as Blob;
      this.files.set(path, Buffer.from(await file.arrayBuffer()));
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify([{ name: path.split('/').pop(), type: 'file', path }]));
    } else {
      response.writeHead(404).end();
    }
  }

  /** Runs a tiny scripted "shell": `echo X`, `echo X >&2`, `exit N`, `sleep N` (until killed). */
  private async startProcess(body: { process: { args: string[] } }, response: ServerResponse): Promise<void> {
    const line = body.process.args[2] ?? '';
    const pid = this.nextPid++;
    response.writeHead(200, { 'content-type': 'application/connect+json' });
    response.write(envelope(0, { event: { start: { pid } } }));
    let exitCode = 0;
    for (const part of line.split(';').map((each) => each.trim())) {
      const echo = /^echo (\S+)( >&2)?$/.exec(part);
      if (echo) {
        const stream = echo[2] ? 'stderr' : 'stdout';
        response.write(envelope(0, { event: { data: { [stream]: Buffer.from(`${echo[1]}\n`).toString('base64') } } }));
      }
      const exit = /^exit (\d+)$/.exec(part);
      if (exit) exitCode = Number(exit[1]);
      if (/^sleep \d+$/.test(part)) {
        const signal = await new Promise<string>((resolve) => this.waiting.set(pid, resolve));
        response.write(envelope(0, { event: { end: { exitCode: -1, exited: false, status: `signal: killed (${signal})` } } }));
        response.end(envelope(2, {}));
        return;
      }
    }
    response.write(
      envelope(0, { event: { end: { ...(exitCode !== 0 && { exitCode }), exited: true, status: `exit status ${exitCode}` } } }),
    );
    response.end(envelope(2, {}));
  }
}

describe('E2BRuntime against a loopback E2B (real wire format, not run against the live service)', () => {
  const fake = new FakeE2B();
  let runtime: E2BRuntime;

  beforeAll(async () => {
    await fake.start();
    runtime = new E2BRuntime({ apiKey: 'e2b_test_key', apiUrl: fake.url, sandboxUrl: fake.url, template: 'troupe-template' });
  });
  afterAll(() => {
    fake.server.close();
  });

  it('creates a sandbox from the template with labels as metadata, no internet, and no credential env', async () => {
    const sandbox = await runtime.createSandbox({ labels: { run: 'r1' }, env: { PLAIN: 'x', OPENAI_API_KEY: 'secret' } });
    const create = fake.requests.find((request) => request.path === 'POST /v2/sandboxes');
    expect(create?.headers['x-api-key']).toBe('e2b_test_key');
    expect(create?.body).toMatchObject({
      templateID: 'troupe-template',
      metadata: { 'troupe.sandbox': '1', run: 'r1' },
      envVars: { PLAIN: 'x' },
      allow_internet_access: false,
    });
    expect((create?.body as { envVars: Record<string, string> } | undefined)?.envVars.OPENAI_API_KEY).toBeUndefined();
    expect(sandbox.id).toBe('sbx-1');
    await sandbox.stop();
  });

  it('runs commands through envd with bash -l -c in the workdir and maps stdout, stderr and exit codes', async () => {
    const sandbox = await runtime.createSandbox();
    const ok = await sandbox.exec('echo hello; echo oops >&2', { env: { ONLY_HERE: '1' } });
    expect(ok).toMatchObject({ exitCode: 0, stdout: 'hello\n', stderr: 'oops\n', timedOut: false });
    const start = fake.requests.filter((request) => request.path === 'POST /process.Process/Start').at(-1);
    expect(start?.body).toMatchObject({
      process: { cmd: '/bin/bash', args: ['-l', '-c', 'echo hello; echo oops >&2'], cwd: '/home/user', envs: { ONLY_HERE: '1' } },
    });
    expect(start?.headers['x-access-token']).toBe('envd-token');
    expect((await sandbox.exec('exit 7')).exitCode).toBe(7);
    await sandbox.stop();
  });

  it('kills the process with SIGKILL over SendSignal when the timeout passes', async () => {
    const sandbox = await runtime.createSandbox();
    const result = await sandbox.exec('sleep 60', { timeoutMs: 200 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).not.toBe(0);
    const signal = fake.requests.find((request) => request.path === 'POST /process.Process/SendSignal');
    expect(signal?.body).toMatchObject({ signal: 'SIGNAL_SIGKILL' });
    await sandbox.stop();
  });

  it('writes and reads files byte for byte through envd /files, relative to the workdir', async () => {
    const sandbox = await runtime.createSandbox();
    const bytes = Uint8Array.from({ length: 256 }, (_, index) => index);
    await sandbox.writeFile('data.bin', bytes);
    expect(fake.files.get('/home/user/data.bin')?.equals(Buffer.from(bytes))).toBe(true);
    expect(Buffer.from(await sandbox.readFile('/home/user/data.bin')).equals(Buffer.from(bytes))).toBe(true);
    await expect(sandbox.readFile('missing.txt')).rejects.toMatchObject({ name: 'SandboxError' });
    await sandbox.stop();
  });

  it('kills the sandbox on stop; later calls fail with a SandboxError', async () => {
    const sandbox = await runtime.createSandbox();
    expect(await sandbox.alive()).toBe(true);
    await sandbox.stop();
    expect(fake.requests.some((request) => request.path === 'DELETE /sandboxes/sbx-1')).toBe(true);
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('echo hi')).rejects.toMatchObject({ name: 'SandboxError' });
  });

  it('rejects a config without an API key, naming the field', () => {
    expect(() => new E2BRuntime({} as never)).toThrow(/e2b\.apiKey/);
  });
});

describe('e2b preflight against the loopback E2B: the key in its variable, accepted by the API', () => {
  const fake = new FakeE2B();
  const fromEnv = (env: Record<string, string>, apiUrl = fake.url) => createRuntime({ apiUrl }, { env });

  beforeAll(() => fake.start());
  afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));

  it('passes with a key the API accepts, after one list call that carries it', async () => {
    await expect(fromEnv({ E2B_API_KEY: fake.apiKey }).preflight()).resolves.toBeUndefined();
    const list = fake.requests.at(-1);
    expect(list?.path).toBe('GET /v2/sandboxes');
    expect(list?.headers['x-api-key']).toBe(fake.apiKey);
  });

  it('a key the API refuses (401) fails naming E2B_API_KEY, never the key', async () => {
    const error = (await fromEnv({ E2B_API_KEY: 'e2b_wrong_secret' })
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toMatchObject({ name: 'SandboxError' });
    expect(error.message).toMatch(/refused the key in E2B_API_KEY.*Unauthorized/);
    expect(error.message).not.toContain('e2b_wrong_secret');
  });

  it('a missing key variable fails when the runtime is built, naming the variable', () => {
    expect(() => fromEnv({})).toThrow(/E2B_API_KEY/);
  });

  it('an API that does not answer fails naming its URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = (await fromEnv({ E2B_API_KEY: fake.apiKey }, url)
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain(`${url} does not answer`);
  });
});
