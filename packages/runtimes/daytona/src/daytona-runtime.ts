import { Daytona, type Sandbox as DaytonaSandboxClient } from '@daytonaio/sdk';
import {
  type ExecOptions,
  type ExecResult,
  RemoteRuntime,
  RemoteSandbox,
  type RuntimeCapabilities,
  type SandboxOptions,
} from '@troupe/verifiers';
import { ApiKeyRuntimeOptionsSchema, type CreationSlot, shellQuote } from '@troupe/verifiers/internal';
import { z } from 'zod';

/** Config of the `daytona` runtime. The API key is injected by the caller; `apiUrl` defaults to `https://app.daytona.io/api`. */
export const DaytonaRuntimeOptionsSchema = ApiKeyRuntimeOptionsSchema.extend({
  /** Region target (`us`, `eu`). */
  target: z.string().optional(),
  /** Snapshot sandboxes start from (a sandbox's `image` option overrides it). */
  snapshot: z.string().optional(),
  /** Working directory (default `/home/daytona`). */
  workdir: z.string().startsWith('/').optional(),
  /** Minutes of inactivity before Daytona stops a sandbox (default 15). */
  autoStopMinutes: z.number().int().nonnegative().optional(),
  /** Seconds to wait for a sandbox to start (default 120). */
  createTimeoutSeconds: z.number().int().positive().optional(),
}).strict();
/**
 * The `daytona` runtime's options, as `new DaytonaRuntime(options)` and the agent config's
 * `runtime = { id = "daytona", … }` take them; {@link DaytonaRuntimeOptionsSchema} documents each
 * field, its unit and its default.
 */
export type DaytonaRuntimeOptions = z.infer<typeof DaytonaRuntimeOptionsSchema>;

const STDERR_DIR = '/tmp/.troupe-stderr';

/**
 * One Daytona sandbox. Commands go through the toolbox's `process/execute` (which merges the
 * streams), so each command redirects its stderr to a file that is read back and removed:
 * stdout and stderr stay apart.
 */
export class DaytonaSandbox extends RemoteSandbox {
  readonly runtime = 'daytona';
  readonly id: string;
  private sequence = 0;

  constructor(
    private readonly client: DaytonaSandboxClient,
    readonly workdir: string,
    slot: CreationSlot,
  ) {
    super(slot);
    this.id = client.id;
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const line = this.execLine(command, options);
    const number = ++this.sequence;
    const stderrFile = `${STDERR_DIR}/${number}`;
    const stdinFile = `${STDERR_DIR}/${number}.in`;
    if (options.stdin !== undefined) await this.writeFile(stdinFile, options.stdin);
    const input = options.stdin !== undefined ? stdinFile : '/dev/null';
    const wrapped = `mkdir -p ${STDERR_DIR}; sh -c ${shellQuote(line)} < ${input} 2> ${stderrFile}`;
    const cwd = options.cwd === undefined ? this.workdir : this.resolve(options.cwd);
    const started = performance.now();
    const timeoutSeconds = options.timeoutMs === undefined ? 0 : Math.max(1, Math.ceil(options.timeoutMs / 1000));
    const request = this.client.process.executeCommand(`sh -c ${shellQuote(wrapped)}`, cwd, options.env, timeoutSeconds);
    const aborted = new Promise<never>((_, reject) => {
      options.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true });
    });
    let response: Awaited<typeof request>;
    try {
      response = await (options.signal ? Promise.race([request, aborted]) : request);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw this.failure('exec', error);
    }
    const durationMs = performance.now() - started;
    const stderr = await this.readFile(stderrFile).then(
      (bytes) => Buffer.from(bytes).toString('utf8'),
      () => '',
    );
    void this.client.process.executeCommand(`rm -f ${stderrFile} ${stdinFile}`).catch(() => undefined);
    const timedOut =
      options.timeoutMs !== undefined &&
      (response.exitCode === -1 || (response.exitCode !== 0 && durationMs >= options.timeoutMs));
    options.onStdout?.(response.result);
    if (stderr) options.onStderr?.(stderr);
    return {
      exitCode: response.exitCode === -1 ? 137 : response.exitCode,
      stdout: response.result,
      stderr,
      timedOut,
      durationMs,
    };
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.assertRunning('readFile');
    try {
      return new Uint8Array(await this.client.fs.downloadFile(this.resolve(path)));
    } catch (error) {
      throw this.failure(`readFile ${path}`, error);
    }
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    this.assertRunning('writeFile');
    const target = this.resolve(path);
    try {
      await this.client.fs.uploadFile(Buffer.from(data), target);
      if (options.mode !== undefined) await this.client.fs.setFilePermissions(target, { mode: options.mode.toString(8) });
    } catch (error) {
      throw this.failure(`writeFile ${path}`, error);
    }
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      await this.client.refreshData();
      return this.client.state === 'started';
    } catch {
      return false;
    }
  }

  protected async destroy(): Promise<void> {
    await this.client.delete();
  }
}

/** Sandboxes on Daytona (`@daytonaio/sdk`): labelled, network blocked unless allowed, deleted on stop. */
export class DaytonaRuntime extends RemoteRuntime<DaytonaRuntimeOptions, DaytonaSandbox> {
  static readonly id = 'daytona';
  static readonly optionsSchema = DaytonaRuntimeOptionsSchema;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: true };
  private readonly client: Daytona;

  constructor(options: DaytonaRuntimeOptions) {
    super({ id: DaytonaRuntime.id, schema: DaytonaRuntime.optionsSchema, options });
    this.client = new Daytona({
      apiKey: this.options.apiKey,
      apiUrl: this.options.apiUrl ?? 'https://app.daytona.io/api',
      ...(this.options.target && { target: this.options.target }),
    });
  }

  /**
   * Preflight: list one sandbox, `GET /sandbox?limit=1` with `Authorization: Bearer <key>` (what
   * `@daytonaio/sdk` 0.218 `Daytona.list` sends, `esm/Daytona.js:483`; the path
   * `@daytona/api-client` `src/api/sandbox-api.js:1146`, the header `src/common.js:49`): the cheapest
   * call that needs the key; a refused key is a 401, thrown as `DaytonaAuthenticationError` with
   * `statusCode` 401 (`esm/errors/DaytonaError.js:46-47`).
   */
  protected override async ping(): Promise<void> {
    await this.client.list({ limit: 1 }).next();
  }

  protected async provision(options: SandboxOptions): Promise<(slot: CreationSlot) => DaytonaSandbox> {
    const common = {
      envVars: options.env,
      labels: { 'troupe.sandbox': '1', ...options.labels },
      networkBlockAll: !(options.network ?? false),
      autoStopInterval: this.options.autoStopMinutes ?? 15,
    };
    const resources =
      options.cpu !== undefined || options.memoryMb !== undefined
        ? {
            resources: {
              ...(options.cpu !== undefined && { cpu: Math.ceil(options.cpu) }),
              ...(options.memoryMb !== undefined && { memory: Math.ceil(options.memoryMb / 1024) }),
            },
          }
        : {};
    const params = options.image
      ? { ...common, image: options.image, ...resources }
      : { ...common, ...(this.options.snapshot && { snapshot: this.options.snapshot }) };
    const client = await this.client.create(params, { timeout: this.options.createTimeoutSeconds ?? 120 });
    const workdir = options.workdir ?? this.options.workdir ?? '/home/daytona';
    return (slot) => new DaytonaSandbox(client, workdir, slot);
  }
}
