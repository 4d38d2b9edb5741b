import {
  type ExecOptions,
  type ExecResult,
  RemoteRuntime,
  RemoteSandbox,
  type RuntimeCapabilities,
  SandboxError,
  type SandboxOptions,
} from '@troupe/verifiers';
import { ApiKeyRuntimeOptionsSchema, type CreationSlot, guardExec } from '@troupe/verifiers/internal';
import { CommandExitError, type CommandHandle, Sandbox as E2BSandboxClient } from 'e2b';
import { z } from 'zod';

/**
 * Config of the `e2b` runtime. The API key is injected by the caller (never read from the
 * environment by the runtime); `apiUrl` defaults to E2B's control plane.
 */
export const E2BRuntimeOptionsSchema = ApiKeyRuntimeOptionsSchema.extend({
  /** Sandbox template (default `base`); a sandbox's `image` option overrides it. */
  template: z.string().min(1).optional(),
  /** Override of the in-sandbox (envd) URL, for tests and self-hosting. */
  sandboxUrl: z.string().url().optional(),
  domain: z.string().optional(),
  /** Sandbox lifetime on E2B's side in ms (default 1 h); `stop()` kills it earlier. */
  lifetimeMs: z.number().int().positive().optional(),
  /** Per-request timeout of the SDK in ms. */
  requestTimeoutMs: z.number().int().positive().optional(),
  /** User commands run as (default `user`, E2B's default). */
  user: z.string().optional(),
  /** Working directory (default `/home/user`). */
  workdir: z.string().startsWith('/').optional(),
}).strict();
/**
 * The `e2b` runtime's options, as `new E2BRuntime(options)` and the agent config's
 * `runtime = { id = "e2b", … }` take them; {@link E2BRuntimeOptionsSchema} documents each field, its
 * unit and its default.
 */
export type E2BRuntimeOptions = z.infer<typeof E2BRuntimeOptionsSchema>;

/**
 * The `e2b` SDK's sandbox as the public types name it: opaque, because the SDK's declarations
 * need the DOM's fetch types (`HeadersInit`), which a Node project's `tsc` does not have.
 */
export interface E2BSdkSandbox {
  readonly sandboxId: string;
}

/** One E2B sandbox (a Firecracker microVM) driven through the `e2b` SDK. */
export class E2BSandbox extends RemoteSandbox {
  readonly runtime = 'e2b';
  readonly id: string;
  private readonly client: E2BSandboxClient;

  /** `client` is a sandbox of the `e2b` SDK (`Sandbox.create`). */
  constructor(
    client: E2BSdkSandbox,
    readonly workdir: string,
    private readonly user: string | undefined,
    slot: CreationSlot,
  ) {
    super(slot);
    this.client = client as E2BSandboxClient;
    this.id = client.sandboxId;
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const line = this.execLine(command, options);
    const started = performance.now();
    let handle: CommandHandle;
    try {
      handle = await this.client.commands.run(line, {
        background: true,
        cwd: options.cwd === undefined ? this.workdir : this.resolve(options.cwd),
        ...(options.env && { envs: options.env }),
        ...(this.user && { user: this.user }),
        ...(options.onStdout && { onStdout: options.onStdout }),
        ...(options.onStderr && { onStderr: options.onStderr }),
        stdin: options.stdin !== undefined,
        timeoutMs: 0,
      });
    } catch (error) {
      throw this.failure('exec', error);
    }
    if (options.stdin !== undefined) {
      const data = typeof options.stdin === 'string' ? options.stdin : Buffer.from(options.stdin).toString('utf8');
      await this.client.commands.sendStdin(handle.pid, data);
      await this.client.commands.closeStdin(handle.pid);
    }
    const kill = () => void handle.kill().catch(() => undefined);
    const guard = guardExec({ timeoutMs: options.timeoutMs, signal: options.signal, kill });
    try {
      const result = await handle.wait().catch((error: unknown) => {
        if (error instanceof CommandExitError) return { exitCode: error.exitCode, stdout: error.stdout, stderr: error.stderr };
        if (guard.timedOut || guard.aborted) return { exitCode: 137, stdout: handle.stdout, stderr: handle.stderr };
        throw this.failure('exec', error);
      });
      if (guard.aborted) throw options.signal?.reason ?? new SandboxError('exec aborted');
      return {
        exitCode: guard.timedOut && result.exitCode === 0 ? 137 : result.exitCode,
        stdout: result.stdout,
        stderr: result.stderr,
        timedOut: guard.timedOut,
        durationMs: performance.now() - started,
      };
    } finally {
      guard.dispose();
    }
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.assertRunning('readFile');
    try {
      return await this.client.files.read(this.resolve(path), { format: 'bytes', ...(this.user && { user: this.user }) });
    } catch (error) {
      throw this.failure(`readFile ${path}`, error);
    }
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    this.assertRunning('writeFile');
    const target = this.resolve(path);
    try {
      const body = typeof data === 'string' ? data : new Blob([new Uint8Array(data)]);
      await this.client.files.write(target, body, this.user ? { user: this.user } : undefined);
    } catch (error) {
      throw this.failure(`writeFile ${path}`, error);
    }
    if (options.mode !== undefined) {
      const changed = await this.exec(['chmod', options.mode.toString(8), target]);
      if (changed.exitCode !== 0)
        throw new SandboxError(`chmod ${path} failed in e2b sandbox ${this.id}: ${changed.stderr.trim()}`);
    }
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    return this.client.isRunning().catch(() => false);
  }

  protected async destroy(): Promise<void> {
    await this.client.kill();
  }
}

/** Sandboxes on E2B (`e2b` SDK): create from a template, commands and files over envd, killed on stop. */
export class E2BRuntime extends RemoteRuntime<E2BRuntimeOptions, E2BSandbox> {
  static readonly id = 'e2b';
  static readonly optionsSchema = E2BRuntimeOptionsSchema;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: true };

  constructor(options: E2BRuntimeOptions) {
    super({ id: E2BRuntime.id, schema: E2BRuntime.optionsSchema, options });
  }

  private connection() {
    const { apiKey, apiUrl, sandboxUrl, domain, requestTimeoutMs } = this.options;
    return {
      apiKey,
      ...(apiUrl && { apiUrl }),
      ...(sandboxUrl && { sandboxUrl }),
      ...(domain && { domain }),
      ...(requestTimeoutMs && { requestTimeoutMs }),
    };
  }

  /**
   * Preflight: list one sandbox, `GET /v2/sandboxes?limit=1` with the key in `X-API-KEY` (E2B's
   * js-sdk `packages/js-sdk/src/sandbox/sandboxApi.ts:1869`, header `src/api/index.ts:118`): the
   * cheapest call that needs the key; a refused key is a 401, which the SDK throws as an
   * `AuthenticationError` (`src/api/index.ts:40`).
   */
  protected override async ping(signal: AbortSignal): Promise<void> {
    await E2BSandboxClient.list({ ...this.connection(), limit: 1 }).nextItems({ signal });
  }

  protected async provision(options: SandboxOptions): Promise<(slot: CreationSlot) => E2BSandbox> {
    const client = await E2BSandboxClient.create(options.image ?? this.options.template ?? 'base', {
      ...this.connection(),
      metadata: { 'troupe.sandbox': '1', ...options.labels },
      envs: options.env,
      allowInternetAccess: options.network ?? false,
      timeoutMs: this.options.lifetimeMs ?? 3_600_000,
    });
    const workdir = options.workdir ?? this.options.workdir ?? '/home/user';
    return (slot) => new E2BSandbox(client, workdir, this.options.user, slot);
  }
}
