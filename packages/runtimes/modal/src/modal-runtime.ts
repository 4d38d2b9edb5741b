import {
  type ExecOptions,
  type ExecResult,
  RemoteRuntime,
  RemoteSandbox,
  type RuntimeCapabilities,
  SandboxError,
  type SandboxOptions,
} from '@troupe/verifiers';
import {
  CreationLimitsSchema,
  type CreationSlot,
  DEFAULT_MAX_OUTPUT_BYTES,
  EXEC_PID_DIR,
  ExecOutputCollector,
  FRAMEWORK_PATH,
  FRAMEWORK_SH,
  guardExec,
  killCommand,
  wrapWithPidFile,
} from '@troupe/verifiers/internal';
import { type ContainerProcess, ModalClient, type Sandbox as ModalSdkSandbox } from 'modal';
import { z } from 'zod';

/**
 * Config of the `modal` runtime. The token is injected by the caller (the plugin entry reads it
 * from the environment the CLI passes; the runtime never reads `process.env` itself). The control
 * plane is the SDK's: `https://api.modal.com` unless the SDK's own profile (`~/.modal.toml`,
 * `MODAL_SERVER_URL`) says otherwise.
 */
export const ModalRuntimeOptionsSchema = CreationLimitsSchema.extend({
  /** Modal token secret (`MODAL_TOKEN_SECRET`, `as-…`). */
  apiKey: z.string().min(1),
  /** Modal token id (`MODAL_TOKEN_ID`, `ak-…`). */
  tokenId: z.string().min(1),
  /** The variables the token was read from (set by the plugin entry): errors name them, never the token. */
  apiKeyVar: z.string().min(1).optional(),
  tokenIdVar: z.string().min(1).optional(),
  /** App the sandboxes belong to, created when missing (default `troupe`). */
  appName: z.string().min(1).max(64).optional(),
  /** Modal environment (default: the token's default environment). */
  environment: z.string().min(1).optional(),
  /** Default image, a registry tag (default `debian:bookworm-slim`); a sandbox's `image` overrides it. */
  image: z.string().min(1).optional(),
  /** Default working directory (default `/work`, created at boot). */
  workdir: z.string().startsWith('/').optional(),
  /** Default CPU request (cores). */
  cpu: z.number().positive().optional(),
  /** Default memory request in MiB. */
  memoryMb: z.number().int().positive().optional(),
  /** Sandbox lifetime on Modal's side in ms, a whole number of seconds (default 1 h); `stop()` ends it earlier. */
  lifetimeMs: z.number().int().positive().multipleOf(1000).optional(),
  /** Bytes of stdout and of stderr kept per command (default 64 MiB); the rest is cut and `truncated` set. */
  maxOutputBytes: z.number().int().positive().optional(),
}).strict();
/**
 * The `modal` runtime's options, as `new ModalRuntime(options)` and the agent config's
 * `runtime = { id = "modal", … }` take them; {@link ModalRuntimeOptionsSchema} documents each field,
 * its unit and its default.
 */
export type ModalRuntimeOptions = z.infer<typeof ModalRuntimeOptionsSchema>;

/** What a {@link ModalSandbox} is made from. */
interface ModalSandboxInit {
  sandbox: ModalSdkSandbox;
  workdir: string;
  env: Record<string, string>;
  maxOutputBytes: number;
  slot: CreationSlot;
}

/** How long output may keep streaming after the command exited (a background child holding stdout). */
const OUTPUT_GRACE_MS = 1000;

/** Reads a stream of an exec into `sink` until it ends or the reader is cancelled. */
async function pump(reader: ReadableStreamDefaultReader<Uint8Array>, sink: ExecOutputCollector): Promise<void> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    sink.write(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
}

/**
 * Feeds stdin (when given; closed either way), waits for the exit code and collects stdout and
 * stderr; output still open after the exit is read for {@link OUTPUT_GRACE_MS}, then dropped.
 */
async function settle(
  process: ContainerProcess<Uint8Array>,
  io: { input: Uint8Array | undefined; stdout: ExecOutputCollector; stderr: ExecOutputCollector },
): Promise<number> {
  const readers = [process.stdout.getReader(), process.stderr.getReader()] as const;
  const cancel = () => {
    for (const reader of readers) void reader.cancel().catch(() => undefined);
  };
  const drains = Promise.all([pump(readers[0], io.stdout), pump(readers[1], io.stderr)]);
  let exitCode: number;
  try {
    const writer = process.stdin.getWriter();
    if (io.input !== undefined && io.input.length > 0) await writer.write(io.input);
    await writer.close();
    exitCode = await process.wait();
  } catch (error) {
    cancel();
    await drains.catch(() => undefined);
    throw error;
  }
  const grace = setTimeout(cancel, OUTPUT_GRACE_MS);
  try {
    await drains;
  } finally {
    clearTimeout(grace);
  }
  return exitCode;
}

/**
 * One Modal sandbox driven through the official SDK (`modal` 0.x): commands are `Sandbox.exec`
 * (stdout / stderr streamed over the task command router, stdin written then closed), each run
 * under a pid-file wrapper so a timeout or abort kills its whole process group with a second exec;
 * files go through `cat` execs (bytes in on stdin, out on stdout); `stop` terminates it.
 */
export class ModalSandbox extends RemoteSandbox {
  readonly runtime = 'modal';
  readonly id: string;
  readonly workdir: string;
  private readonly sandbox: ModalSdkSandbox;
  private readonly env: Record<string, string>;
  private readonly maxOutputBytes: number;
  private execCount = 0;

  constructor(init: ModalSandboxInit) {
    super(init.slot);
    this.sandbox = init.sandbox;
    this.id = init.sandbox.sandboxId;
    this.workdir = init.workdir;
    this.env = init.env;
    this.maxOutputBytes = init.maxOutputBytes;
  }

  private async start(
    argv: string[],
    options: { cwd?: string; env?: Record<string, string> },
  ): Promise<ContainerProcess<Uint8Array>> {
    try {
      return await this.sandbox.exec(argv, {
        mode: 'binary',
        workdir: options.cwd ?? this.workdir,
        env: { ...this.env, ...options.env },
      });
    } catch (error) {
      throw this.failure('exec', error);
    }
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const line = this.execLine(command, options);
    const started = performance.now();
    const pidFile = `${EXEC_PID_DIR}/${++this.execCount}`;
    const process = await this.start(wrapWithPidFile([FRAMEWORK_SH, '-c', line], pidFile), {
      cwd: options.cwd === undefined ? undefined : this.resolve(options.cwd),
      env: options.env,
    });
    const stdout = new ExecOutputCollector(this.maxOutputBytes, options.onStdout);
    const stderr = new ExecOutputCollector(this.maxOutputBytes, options.onStderr);
    const kill = () => void this.kill(pidFile);
    const guard = guardExec({ timeoutMs: options.timeoutMs, signal: options.signal, kill });
    try {
      const input = options.stdin === undefined ? undefined : Buffer.from(options.stdin);
      const exitCode = await settle(process, { input, stdout, stderr });
      if (guard.aborted) throw options.signal?.reason ?? new SandboxError('exec aborted');
      return {
        exitCode: guard.timedOut && exitCode === 0 ? 137 : exitCode,
        stdout: stdout.text(),
        stderr: stderr.text(),
        timedOut: guard.timedOut,
        durationMs: performance.now() - started,
        ...((stdout.truncated || stderr.truncated) && { truncated: true }),
      };
    } catch (error) {
      if (guard.aborted) throw options.signal?.reason ?? new SandboxError('exec aborted');
      throw this.failure('exec', error);
    } finally {
      guard.dispose();
    }
  }

  /** SIGKILLs the process group an exec recorded in `pidFile` (a second exec; errors are ignored). */
  private async kill(pidFile: string): Promise<void> {
    try {
      const killer = await this.sandbox.exec(killCommand(pidFile), { mode: 'binary' });
      await killer.stdin.close();
      await killer.wait();
    } catch {
      // The sandbox may be gone already; the exec's own wait reports what happened.
    }
  }

  /** Runs a framework command (absolute shell, fixed PATH) and fails with its stderr when it fails. */
  private async run(operation: string, script: string, input?: Uint8Array): Promise<Uint8Array> {
    this.assertRunning(operation);
    const process = await this.start([FRAMEWORK_SH, '-c', `PATH=${FRAMEWORK_PATH}; ${script}`], {});
    const stdout = new ExecOutputCollector(Number.MAX_SAFE_INTEGER);
    const stderr = new ExecOutputCollector(64 * 1024);
    let exitCode: number;
    try {
      exitCode = await settle(process, { input, stdout, stderr });
    } catch (error) {
      throw this.failure(operation, error);
    }
    if (exitCode !== 0) throw new SandboxError(`${operation} failed in modal sandbox ${this.id}: ${stderr.text().trim()}`);
    return new Uint8Array(stdout.bytes());
  }

  async readFile(path: string): Promise<Uint8Array> {
    const target = this.resolve(path);
    return this.run(`readFile ${path}`, `cat -- ${quote(target)}`);
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    const target = this.resolve(path);
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    const chmod = options.mode === undefined ? '' : ` && chmod ${options.mode.toString(8)} -- ${quote(target)}`;
    const parent = target.slice(0, target.lastIndexOf('/')) || '/';
    await this.run(`writeFile ${path}`, `mkdir -p -- ${quote(parent)} && cat > ${quote(target)}${chmod}`, bytes);
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      return (await this.sandbox.poll()) === null;
    } catch {
      return false;
    }
  }

  protected async destroy(): Promise<void> {
    try {
      await this.sandbox.terminate();
    } finally {
      this.sandbox.detach();
    }
  }
}

/** A POSIX shell single-quoted word. */
function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * Sandboxes on Modal through Modal Labs' official JavaScript SDK (`modal` 0.x): an app found or
 * created by name, an image from a registry tag, `Sandbox.create` with CPU, memory, lifetime, no
 * network unless allowed and the labels as tags; each sandbox's env is passed with every command
 * (never as a Modal secret), minus secret-looking names.
 */
export class ModalRuntime extends RemoteRuntime<ModalRuntimeOptions, ModalSandbox> {
  static readonly id = 'modal';
  static readonly optionsSchema = ModalRuntimeOptionsSchema;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: true };
  private client: ModalClient | undefined;

  constructor(options: ModalRuntimeOptions) {
    super({ id: ModalRuntime.id, schema: ModalRuntime.optionsSchema, options });
  }

  /** The SDK client, made on first use with the injected token. */
  private modal(): ModalClient {
    const { tokenId, apiKey, environment } = this.options;
    this.client ??= new ModalClient({ tokenId, tokenSecret: apiKey, ...(environment && { environment }) });
    return this.client;
  }

  /**
   * Preflight: look the app up without creating it (`AppGetOrCreate` with no creation type, what
   * `apps.fromName` sends without `createIfMissing`: libmodal `modal-js/src/app.ts:28-47`), the
   * cheapest control-plane call; the token pair rides on every call as `x-modal-token-id` /
   * `x-modal-token-secret` (`modal-js/src/client.ts:333-334`). A missing app (`NotFoundError`) still
   * proves the token good; a refused token is gRPC UNAUTHENTICATED.
   */
  protected override async ping(): Promise<void> {
    try {
      await this.modal().apps.fromName(this.options.appName ?? 'troupe', {
        ...(this.options.environment && { environment: this.options.environment }),
      });
    } catch (error) {
      if ((error as Error).name !== 'NotFoundError') throw error;
    }
  }

  /** gRPC UNAUTHENTICATED (16) or PERMISSION_DENIED (7), as nice-grpc's `ClientError.code`. */
  protected override refusesCredentials(error: unknown): boolean {
    const code = (error as { code?: unknown } | undefined)?.code;
    return code === 16 || code === 7 || super.refusesCredentials(error);
  }

  protected override credentialSource(): string {
    const { apiKeyVar, tokenIdVar } = this.options;
    return apiKeyVar && tokenIdVar ? `the token in ${tokenIdVar} / ${apiKeyVar}` : 'the modal.tokenId / modal.apiKey options';
  }

  protected override apiLocation(): string {
    return "Modal's control plane";
  }

  protected async provision(options: SandboxOptions): Promise<(slot: CreationSlot) => ModalSandbox> {
    const modal = this.modal();
    const app = await modal.apps.fromName(this.options.appName ?? 'troupe', {
      createIfMissing: true,
      ...(this.options.environment && { environment: this.options.environment }),
    });
    const image = modal.images.fromRegistry(options.image ?? this.options.image ?? 'debian:bookworm-slim');
    const cpu = options.cpu ?? this.options.cpu;
    const memoryMb = options.memoryMb ?? this.options.memoryMb;
    const sandbox = await modal.sandboxes.create(app, image, {
      timeoutMs: this.options.lifetimeMs ?? 3_600_000,
      blockNetwork: !(options.network ?? false),
      tags: { 'troupe.sandbox': '1', ...options.labels },
      ...(cpu !== undefined && { cpu }),
      ...(memoryMb !== undefined && { memoryMiB: Math.ceil(memoryMb) }),
    });
    const workdir = options.workdir ?? this.options.workdir ?? '/work';
    const made = (slot: CreationSlot) =>
      new ModalSandbox({
        sandbox,
        workdir,
        env: options.env ?? {},
        maxOutputBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        slot,
      });
    try {
      const mkdir = await sandbox.exec([FRAMEWORK_SH, '-c', `PATH=${FRAMEWORK_PATH} mkdir -p -- ${quote(workdir)}`], {
        mode: 'binary',
      });
      await mkdir.stdin.close();
      const code = await mkdir.wait();
      if (code !== 0) throw new SandboxError(`could not create the workdir ${workdir} (exit ${code})`);
    } catch (error) {
      await sandbox.terminate().catch(() => undefined);
      sandbox.detach();
      throw error;
    }
    return made;
  }
}
