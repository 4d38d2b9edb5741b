import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DaytonaRuntime } from './daytona-runtime.ts';
import { createRuntime } from './index.ts';

/**
 * A loopback stand-in for Daytona speaking the wire format `@daytonaio/sdk` uses (read from its
 * sources): `POST /sandbox`, `GET|DELETE /sandbox/{id}` on the control plane, and the toolbox
 * behind `toolboxProxyUrl`: `POST {id}/process/execute` ({command, cwd, timeout, envs} →
 * {exitCode, result}), `POST {id}/files/bulk-upload` (multipart `files[i].path` / `files[i].file`),
 * `POST {id}/files/bulk-download` (JSON paths → multipart parts named `file` or `error`, each with
 * the source path as filename). Not run against the live service.
 */
interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

class FakeDaytona {
  readonly requests: Recorded[] = [];
  /** The one key the control plane accepts. */
  readonly apiKey = 'dtn_test_key';
  readonly files = new Map<string, Buffer>();
  state = 'started';
  server: Server = createServer((request, response) => void this.handle(request, response));
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private sandbox() {
    return {
      id: 'sb-1',
      state: this.state,
      toolboxProxyUrl: `${this.url}/toolbox`,
      labels: {},
      env: {},
      cpu: 1,
      memory: 1,
      disk: 3,
      gpu: 0,
      user: 'daytona',
      public: false,
      target: 'us',
      organizationId: 'org',
    };
  }

  private json(response: ServerResponse, status: number, body: unknown): void {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(request.url ?? '/', this.url);
    const contentType = request.headers['content-type'] ?? '';
    const body = contentType.includes('application/json') && raw.length > 0 ? JSON.parse(raw.toString()) : raw;
    this.requests.push({ path: `${request.method} ${url.pathname}`, headers: request.headers, body });

    // The control plane authenticates every call by `Authorization: Bearer <key>` (api-client
    // src/common.js:49) and answers a missing or wrong key 401 (the SDK's DaytonaAuthenticationError,
    // esm/errors/DaytonaError.js:46-47), in NestJS's error shape.
    if (url.pathname.startsWith('/sandbox') && request.headers.authorization !== `Bearer ${this.apiKey}`)
      return this.json(response, 401, { statusCode: 401, message: 'Unauthorized' });
    // List (sandbox-api.js:1146): a cursor page, `{ items, nextCursor }` (esm/Daytona.js:497-503).
    if (request.method === 'GET' && url.pathname === '/sandbox') return this.json(response, 200, { items: [], nextCursor: null });
    if (request.method === 'POST' && url.pathname === '/sandbox') return this.json(response, 200, this.sandbox());
    if (request.method === 'GET' && url.pathname === '/sandbox/sb-1') return this.json(response, 200, this.sandbox());
    if (request.method === 'DELETE' && url.pathname === '/sandbox/sb-1') {
      this.state = 'destroyed';
      return this.json(response, 200, this.sandbox());
    }
    if (url.pathname === '/toolbox/sb-1/process/execute')
      return this.execute(body as { command: string; timeout?: number }, response);
    if (url.pathname === '/toolbox/sb-1/files/bulk-upload') {
      const form = await new Request('http://fixture/', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: raw,
      }).formData();
      for (let index = 0; form.has(`files[${index}].path`); index++) {
        const file = form.get(`files[${index}].file`) as Blob;
        this.files.set(String(form.get(`files[${index}].path`)), Buffer.from(await file.arrayBuffer()));
      }
      return this.json(response, 200, {});
    }
    if (url.pathname === '/toolbox/sb-1/files/bulk-download') {
      const boundary = 'fixture-boundary';
      const parts = (body as { paths: string[] }).paths.map((path) => {
        const file = this.files.get(path);
        const name = file ? 'file' : 'error';
        const content = file ?? Buffer.from(JSON.stringify({ message: `file not found: ${path}`, statusCode: 404 }));
        const type = file ? 'application/octet-stream' : 'application/json';
        return Buffer.concat([
          Buffer.from(
            `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${path}"\r\nContent-Type: ${type}\r\n\r\n`,
          ),
          content,
          Buffer.from('\r\n'),
        ]);
      });
      response.writeHead(200, { 'content-type': `multipart/form-data; boundary=${boundary}` });
      response.end(Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]));
      return;
    }
    this.json(response, 404, { statusCode: 404, message: 'not found' });
  }

  /** A scripted shell: the wrapped command's stderr file gets what the program wrote to stderr. */
  private async execute(body: { command: string; timeout?: number }, response: ServerResponse): Promise<void> {
    const stderrPath = /2> (\/tmp\/\.troupe-stderr\/\d+)/.exec(body.command)?.[1];
    if (body.command.includes('sleep')) {
      await new Promise((resolve) => setTimeout(resolve, (body.timeout ?? 1) * 1000));
      return this.json(response, 200, { exitCode: -1, result: '' });
    }
    if (body.command.includes('echo out')) {
      if (stderrPath) this.files.set(stderrPath, Buffer.from('err\n'));
      return this.json(response, 200, { exitCode: 3, result: 'out\n' });
    }
    this.json(response, 200, { exitCode: 0, result: '' });
  }
}

describe('DaytonaRuntime against a loopback Daytona (real wire format, not run against the live service)', () => {
  const fake = new FakeDaytona();
  let runtime: DaytonaRuntime;

  beforeAll(async () => {
    await fake.start();
    runtime = new DaytonaRuntime({ apiKey: 'dtn_test_key', apiUrl: fake.url });
  });
  afterAll(() => {
    fake.server.close();
  });

  it('creates a labelled sandbox with the network blocked and no credential env, authenticated by the API key', async () => {
    fake.state = 'started';
    const sandbox = await runtime.createSandbox({ labels: { run: 'r1' }, env: { PLAIN: 'x', GITHUB_TOKEN: 'secret' } });
    const create = fake.requests.find((request) => request.path === 'POST /sandbox');
    expect(create?.headers.authorization).toBe('Bearer dtn_test_key');
    expect(create?.body).toMatchObject({
      env: { PLAIN: 'x' },
      labels: { 'troupe.sandbox': '1', run: 'r1' },
      networkBlockAll: true,
    });
    expect((create?.body as { env: Record<string, string> } | undefined)?.env.GITHUB_TOKEN).toBeUndefined();
    expect(sandbox.id).toBe('sb-1');
    await sandbox.stop();
  });

  it('runs a command through the toolbox and keeps stderr apart from stdout', async () => {
    fake.state = 'started';
    const sandbox = await runtime.createSandbox();
    const result = await sandbox.exec('echo out; echo err >&2; exit 3', { env: { ONLY_HERE: '1' } });
    expect(result).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false });
    const execute = fake.requests.find((request) => request.path === 'POST /toolbox/sb-1/process/execute');
    expect(execute?.body).toMatchObject({ cwd: '/home/daytona', envs: { ONLY_HERE: '1' } });
    expect((execute?.body as { command: string } | undefined)?.command).toContain('< /dev/null');
    await sandbox.stop();
  });

  it('passes the timeout to the toolbox and reports timedOut when it kills the command', async () => {
    fake.state = 'started';
    const sandbox = await runtime.createSandbox();
    const result = await sandbox.exec('sleep 60', { timeoutMs: 1000 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(137);
    const execute = fake.requests
      .filter((request) => request.path === 'POST /toolbox/sb-1/process/execute')
      .find((request) => (request.body as { command: string }).command.includes('sleep'));
    expect(execute?.body).toMatchObject({ timeout: 1 });
    await sandbox.stop();
  });

  it('round-trips binary files through bulk upload / download and refuses a missing file with a SandboxError', async () => {
    fake.state = 'started';
    const sandbox = await runtime.createSandbox();
    const bytes = Uint8Array.from({ length: 256 }, (_, index) => index);
    await sandbox.writeFile('data.bin', bytes);
    expect(fake.files.get('/home/daytona/data.bin')?.equals(Buffer.from(bytes))).toBe(true);
    expect(Buffer.from(await sandbox.readFile('data.bin')).equals(Buffer.from(bytes))).toBe(true);
    await expect(sandbox.readFile('/nope.txt')).rejects.toMatchObject({ name: 'SandboxError' });
    await sandbox.stop();
  });

  it('deletes the sandbox on stop; alive() turns false and commands fail with a SandboxError', async () => {
    fake.state = 'started';
    const sandbox = await runtime.createSandbox();
    expect(await sandbox.alive()).toBe(true);
    await sandbox.stop();
    expect(fake.requests.some((request) => request.path === 'DELETE /sandbox/sb-1')).toBe(true);
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('echo hi')).rejects.toMatchObject({ name: 'SandboxError' });
  });
});

describe('daytona preflight against the loopback Daytona: the key in its variable, accepted by the API', () => {
  const fake = new FakeDaytona();
  const fromEnv = (env: Record<string, string>, apiUrl = fake.url) => createRuntime({ apiUrl }, { env });

  beforeAll(() => fake.start());
  afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));

  it('passes with a key the API accepts, after one list call that carries it', async () => {
    await expect(fromEnv({ DAYTONA_API_KEY: fake.apiKey }).preflight()).resolves.toBeUndefined();
    const list = fake.requests.at(-1);
    expect(list?.path).toBe('GET /sandbox');
    expect(list?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
  });

  it('a key the API refuses (401) fails naming DAYTONA_API_KEY, never the key', async () => {
    const error = (await fromEnv({ DAYTONA_API_KEY: 'dtn_wrong_secret' })
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toMatchObject({ name: 'SandboxError' });
    expect(error.message).toMatch(/refused the key in DAYTONA_API_KEY \(401\)/);
    expect(error.message).not.toContain('dtn_wrong_secret');
  });

  it('a missing key variable fails when the runtime is built, naming the variable', () => {
    expect(() => fromEnv({})).toThrow(/DAYTONA_API_KEY/);
  });

  it('an API that does not answer fails naming its URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = (await fromEnv({ DAYTONA_API_KEY: fake.apiKey }, url)
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain(`${url} does not answer`);
  });
});
