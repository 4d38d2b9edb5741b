import { posix } from 'node:path';
import {
  type ExecOptions,
  type ExecResult,
  RemoteRuntime,
  RemoteSandbox,
  type RuntimeCapabilities,
  SandboxError,
  type SandboxOptions,
} from '@troupe/verifiers';
import { ApiKeyRuntimeOptionsSchema, type CreationSlot, shellQuote } from '@troupe/verifiers/internal';
import { z } from 'zod';

/** Config of the `prime` runtime. The API key is injected by the caller; `apiUrl` defaults to `https://api.primeintellect.ai/api/v1`. */
export const PrimeRuntimeOptionsSchema = ApiKeyRuntimeOptionsSchema.extend({
  teamId: z.string().optional(),
  /** Default image (a sandbox's `image` overrides it; default `python:3.11-slim`). */
  image: z.string().min(1).optional(),
  /** Working directory for commands (default `/`). */
  workdir: z.string().startsWith('/').optional(),
  diskSizeGb: z.number().int().positive().optional(),
  /** Sandbox lifetime on Prime's side (default 60 min). */
  timeoutMinutes: z.number().int().positive().optional(),
  /** Status polls while a sandbox is created (default 180, one per second after the first few). */
  maxCreatePolls: z.number().int().positive().optional(),
  /** Delay between status polls in ms (default 1000). */
  pollIntervalMs: z.number().int().nonnegative().optional(),
}).strict();
/**
 * The `prime` runtime's options, as `new PrimeRuntime(options)` and the agent config's
 * `runtime = { id = "prime", … }` take them; {@link PrimeRuntimeOptionsSchema} documents each field,
 * its unit and its default.
 */
export type PrimeRuntimeOptions = z.infer<typeof PrimeRuntimeOptionsSchema>;

/** `Sandbox` as the API returns it (camelCase); only the fields troupe reads. */
export const PrimeSandboxSchema = z.object({ id: z.string(), status: z.string(), name: z.string().optional() }).passthrough();
/** Answer of `GET /sandbox` (`SandboxListResponse`, prime-sandboxes `models.py:182-189`); only the list is read. */
const PrimeSandboxListSchema = z.object({ sandboxes: z.array(PrimeSandboxSchema) }).passthrough();
/** Answer of `POST /sandbox/{id}/command`. */
export const PrimeCommandResponseSchema = z.object({ stdout: z.string(), stderr: z.string(), exit_code: z.number().int() });

/** Bytes per `writeFile` command (base64 text stays well under argument limits). */
const WRITE_CHUNK_BYTES = 48 * 1024;

/** A small client for Prime's sandbox REST API (`/sandbox`, `/sandbox/{id}`, `/sandbox/{id}/command`). */
export class PrimeSandboxApi {
  constructor(private readonly options: { apiKey: string; baseUrl: string; fetch?: typeof fetch }) {}

  async request<T extends z.ZodType>(options: {
    method: string;
    path: string;
    body?: unknown;
    schema: T;
    signal?: AbortSignal;
  }): Promise<z.infer<T>> {
    const response = await (this.options.fetch ?? fetch)(`${this.options.baseUrl.replace(/\/$/, '')}${options.path}`, {
      method: options.method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(options.body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      ...(options.signal && { signal: options.signal }),
    });
    const text = await response.text();
    if (!response.ok)
      throw new SandboxError(`prime API ${options.method} ${options.path} answered ${response.status}: ${text.slice(0, 300)}`, {
        statusCode: response.status,
      });
    const parsed = options.schema.safeParse(text ? JSON.parse(text) : {});
    if (!parsed.success)
      throw new SandboxError(
        `prime API ${options.method} ${options.path} returned an unexpected body: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
      );
    return parsed.data;
  }
}

/**
 * One Prime sandbox. Commands go through `POST /sandbox/{id}/command` under `timeout -s KILL`
 * (GNU and busybox `timeout` signal the command's process group); files move as base64 through
 * commands, so only the documented command API is needed.
 */
export class PrimeSandbox extends RemoteSandbox {
  readonly runtime = 'prime';

  constructor(
    private readonly api: PrimeSandboxApi,
    readonly id: string,
    readonly workdir: string,
    slot: CreationSlot,
  ) {
    super(slot);
  }

  private async command(line: string, options: { cwd?: string; env?: Record<string, string>; signal?: AbortSignal } = {}) {
    this.assertRunning('exec');
    return this.api.request({
      method: 'POST',
      path: `/sandbox/${this.id}/command`,
      body: {
        command: line,
        working_dir: options.cwd ?? this.workdir,
        ...(options.env && Object.keys(options.env).length > 0 && { env: options.env }),
      },
      schema: PrimeCommandResponseSchema,
      ...(options.signal && { signal: options.signal }),
    });
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    let line = this.execLine(command, options);
    if (options.stdin !== undefined) {
      const stdinFile = `/tmp/.troupe-stdin-${Date.now()}-${Math.random().toString(16).slice(2)}`;
      await this.writeFile(stdinFile, options.stdin);
      line = `sh -c ${shellQuote(line)} < ${stdinFile}; status=$?; rm -f ${stdinFile}; exit $status`;
    } else {
      line = `sh -c ${shellQuote(line)} < /dev/null`;
    }
    if (options.timeoutMs !== undefined)
      line = `timeout -s KILL ${Math.max(1, Math.ceil(options.timeoutMs / 1000))} sh -c ${shellQuote(line)}`;
    const started = performance.now();
    try {
      const response = await this.command(line, {
        ...(options.cwd !== undefined && { cwd: this.resolve(options.cwd) }),
        ...(options.env && { env: options.env }),
        ...(options.signal && { signal: options.signal }),
      });
      options.onStdout?.(response.stdout);
      options.onStderr?.(response.stderr);
      return {
        exitCode: response.exit_code,
        stdout: response.stdout,
        stderr: response.stderr,
        timedOut: options.timeoutMs !== undefined && response.exit_code === 137,
        durationMs: performance.now() - started,
      };
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (SandboxError.isInstance(error)) throw error;
      throw new SandboxError(`exec failed in prime sandbox ${this.id}: ${(error as Error).message}`, { cause: error });
    }
  }

  async readFile(path: string): Promise<Uint8Array> {
    const target = this.resolve(path);
    const response = await this.command(
      `[ -f ${shellQuote(target)} ] || { echo "no such file: ${target}" >&2; exit 2; }; base64 < ${shellQuote(target)}`,
    );
    if (response.exit_code !== 0)
      throw new SandboxError(`cannot read ${path} in prime sandbox ${this.id}: ${response.stderr.trim()}`);
    return new Uint8Array(Buffer.from(response.stdout.replace(/\s+/g, ''), 'base64'));
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    const target = this.resolve(path);
    const bytes = Buffer.from(data);
    const quoted = shellQuote(target);
    const first = await this.command(`mkdir -p ${shellQuote(posix.dirname(target))} && : > ${quoted}`);
    if (first.exit_code !== 0) throw new SandboxError(`cannot write ${path} in prime sandbox ${this.id}: ${first.stderr.trim()}`);
    for (let offset = 0; offset < bytes.length; offset += WRITE_CHUNK_BYTES) {
      const chunk = bytes.subarray(offset, offset + WRITE_CHUNK_BYTES).toString('base64');
      const appended = await this.command(`printf %s ${chunk} | base64 -d >> ${quoted}`);
      if (appended.exit_code !== 0)
        throw new SandboxError(`cannot write ${path} in prime sandbox ${this.id}: ${appended.stderr.trim()}`);
    }
    if (options.mode !== undefined) await this.command(`chmod ${options.mode.toString(8)} ${quoted}`);
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      const sandbox = await this.api.request({ method: 'GET', path: `/sandbox/${this.id}`, schema: PrimeSandboxSchema });
      return sandbox.status === 'RUNNING';
    } catch {
      return false;
    }
  }

  /** A sandbox already gone (404) counts as deleted. */
  protected async destroy(): Promise<void> {
    try {
      await this.api.request({ method: 'DELETE', path: `/sandbox/${this.id}`, schema: z.unknown() });
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 404) throw error;
    }
  }
}

/** Sandboxes on Prime Intellect over its REST API: created, polled until RUNNING, deleted on stop. */
export class PrimeRuntime extends RemoteRuntime<PrimeRuntimeOptions, PrimeSandbox> {
  static readonly id = 'prime';
  static readonly optionsSchema = PrimeRuntimeOptionsSchema;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: false };
  private readonly api: PrimeSandboxApi;

  constructor(options: PrimeRuntimeOptions & { fetch?: typeof fetch }) {
    const { fetch: injectedFetch, ...rest } = options;
    super({ id: PrimeRuntime.id, schema: PrimeRuntime.optionsSchema, options: rest });
    this.api = new PrimeSandboxApi({
      apiKey: this.options.apiKey,
      baseUrl: this.options.apiUrl ?? 'https://api.primeintellect.ai/api/v1',
      ...(injectedFetch && { fetch: injectedFetch }),
    });
  }

  /**
   * Preflight: list one sandbox, `GET /sandbox?page=1&per_page=1` with `Authorization: Bearer <key>`
   * (Prime's client: `packages/prime-sandboxes/src/prime_sandboxes/sandbox.py:1051-1063`, header
   * `core/client.py:90`): the cheapest call that needs the key; a refused key is a 401
   * (`core/client.py:201-202`).
   */
  protected override async ping(signal: AbortSignal): Promise<void> {
    const team = this.options.teamId ? `&team_id=${encodeURIComponent(this.options.teamId)}` : '';
    await this.api.request({ method: 'GET', path: `/sandbox?page=1&per_page=1${team}`, schema: PrimeSandboxListSchema, signal });
  }

  /** A sandbox created but not RUNNING is deleted before the error is passed on. */
  protected async provision(options: SandboxOptions): Promise<(slot: CreationSlot) => PrimeSandbox> {
    const labels = Object.entries({ 'troupe.sandbox': '1', ...options.labels }).map(([name, value]) => `${name}=${value}`);
    const created = await this.api.request({
      method: 'POST',
      path: '/sandbox',
      body: {
        name: `troupe-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
        docker_image: options.image ?? this.options.image ?? 'python:3.11-slim',
        start_command: 'tail -f /dev/null',
        cpu_cores: Math.max(1, Math.ceil(options.cpu ?? 1)),
        memory_gb: Math.max(1, Math.ceil((options.memoryMb ?? 2048) / 1024)),
        disk_size_gb: this.options.diskSizeGb ?? 10,
        gpu_count: 0,
        timeout_minutes: this.options.timeoutMinutes ?? 60,
        environment_vars: options.env,
        labels,
        ...(this.options.teamId && { team_id: this.options.teamId }),
      },
      schema: PrimeSandboxSchema,
    });
    try {
      await this.waitRunning(created.id, created.status);
    } catch (error) {
      await this.api.request({ method: 'DELETE', path: `/sandbox/${created.id}`, schema: z.unknown() }).catch(() => undefined);
      throw error;
    }
    const workdir = options.workdir ?? this.options.workdir ?? '/';
    return (slot) => new PrimeSandbox(this.api, created.id, workdir, slot);
  }

  private async waitRunning(id: string, initialStatus: string): Promise<void> {
    let status = initialStatus;
    const polls = this.options.maxCreatePolls ?? 180;
    for (let attempt = 0; attempt < polls; attempt++) {
      if (status === 'RUNNING') return;
      if (status === 'ERROR' || status === 'TERMINATED')
        throw new SandboxError(`prime sandbox ${id} did not start (status ${status})`);
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          attempt < 5 ? Math.min(250, this.options.pollIntervalMs ?? 1000) : (this.options.pollIntervalMs ?? 1000),
        ),
      );
      status = (await this.api.request({ method: 'GET', path: `/sandbox/${id}`, schema: PrimeSandboxSchema })).status;
    }
    throw new SandboxError(`prime sandbox ${id} was not RUNNING after ${polls} polls (status ${status})`);
  }
}
