import { randomBytes } from 'node:crypto';
import { existsSync, constants as fsConstants, lstatSync, realpathSync, rmSync } from 'node:fs';
import {
  chmod,
  copyFile,
  cp,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { CreationLimiter, type CreationSlot } from './creation-limiter.ts';
import { LocalPaths } from './local-paths.ts';
import { ensureOwnedDirectory, perUserTempDir } from './owned-directory.ts';
import { killProcessesUnder, PidNamespace, pidNamespacesSupported } from './pid-namespace.ts';
import { killProcessGroup, processExists, runProcessGroup } from './process-group.ts';
import {
  type ExecOptions,
  type ExecResult,
  type Runtime,
  type RuntimeCapabilities,
  type Sandbox,
  type SandboxOptions,
  SandboxOptionsSchema,
} from './runtime.ts';
import { ExecRuntimeOptionsSchema, parseRuntimeOptions, type RuntimeLogger } from './runtime-options.ts';
import { withoutSecrets } from './sandbox-env.ts';

/** Config of the `local` runtime. */
export const LocalRuntimeOptionsSchema = ExecRuntimeOptionsSchema.extend({
  /**
   * Directory holding one subdirectory per sandbox (default `<os tmpdir>/troupe-sandboxes-<uid>`).
   * It must be this user's and not group- or world-writable (created 0700; checked on every create).
   */
  root: z.string().min(1).optional(),
  /** `PATH` of every command (default: the directory of this Node binary, then the usual system dirs). */
  path: z.string().min(1).optional(),
  /** Environment added to every command; names matching /API_KEY|SECRET|TOKEN/i are dropped. */
  env: z.record(z.string(), z.string()).optional(),
  /** Remove sandboxes left behind by dead processes of this host when the first sandbox is created (default true). */
  sweep: z.boolean().optional(),
  /**
   * Run each sandbox's commands in a PID namespace of its own, so that stop() kills every
   * process they started (setsid, double fork, nohup included). Default: when running as root
   * with util-linux `unshare`; `true` requires it; `false` keeps process groups only.
   */
  pidNamespace: z.boolean().optional(),
  /** Refused: local sandboxes share the host's network, so no egress policy can be enforced. */
  egress: z.unknown().optional(),
}).strict();
/**
 * The `local` runtime's options, as `new LocalRuntime(options)` and the agent config's
 * `runtime = { id = "local", … }` take them; {@link LocalRuntimeOptionsSchema} documents each field
 * and its default.
 */
export type LocalRuntimeOptions = z.infer<typeof LocalRuntimeOptionsSchema>;

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const METADATA_SUFFIX = '.sandbox.json';
/** Age after which sandbox debris without a readable owner record is removed by a sweep. */
const ORPHAN_AGE_MS = 10 * 60 * 1000;

/** Every live local sandbox of this process, killed and removed if the process exits without stopping them. */
const liveSandboxes = new Set<LocalSandbox>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const sandbox of liveSandboxes) sandbox.stopSync();
  });
}

interface LocalSandboxInit {
  id: string;
  root: string;
  workdir: string;
  metadataPath: string;
  baseEnv: Record<string, string>;
  maxOutputBytes: number | undefined;
  slot: CreationSlot;
  namespace: PidNamespace | undefined;
}

/**
 * Without a PID namespace: kills every process found under `root` (see `killProcessesUnder`),
 * again while the scan still finds some (one may fork between the scan and its kill), and throws
 * when some are still found after 20 rounds.
 */
async function killAllUnder(root: string): Promise<void> {
  for (let round = 0; round < 20; round++) {
    if (killProcessesUnder(root) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new SandboxError(`processes under ${root} were still found after 20 rounds of SIGKILL`);
}

/**
 * A directory on the host with its own process groups. Commands run as the current user and see
 * the real host filesystem (`local` isolates nothing for programs); the file APIs are confined to
 * the sandbox directory. See docs/runtimes.md for the path rules.
 */
export class LocalSandbox implements Sandbox {
  readonly runtime = 'local';
  readonly id: string;
  readonly workdir: string;
  /** The sandbox's filesystem root on the host (`SANDBOX_ROOT` in every command). */
  readonly root: string;
  private readonly paths: LocalPaths;
  private readonly baseEnv: Record<string, string>;
  private readonly maxOutputBytes: number | undefined;
  private readonly metadataPath: string;
  private readonly slot: CreationSlot;
  private readonly namespace: PidNamespace | undefined;
  private readonly groups = new Set<number>();
  private readonly running = new Set<Promise<unknown>>();
  private stopped = false;
  private stopping: Promise<void> | undefined;

  constructor(init: LocalSandboxInit) {
    this.id = init.id;
    this.root = init.root;
    this.workdir = init.workdir;
    this.paths = new LocalPaths(init.root, init.workdir);
    this.baseEnv = init.baseEnv;
    this.maxOutputBytes = init.maxOutputBytes;
    this.metadataPath = init.metadataPath;
    this.slot = init.slot;
    this.namespace = init.namespace;
  }

  /** How stop() and killAll() find every process: `pid-namespace`, or `process-groups` (+ a /proc scan). */
  get processIsolation(): 'pid-namespace' | 'process-groups' {
    return this.namespace ? 'pid-namespace' : 'process-groups';
  }

  private assertRunning(operation: string): void {
    if (this.stopped) throw new SandboxError(`sandbox ${this.id} is stopped (${operation})`);
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.assertRunning('exec');
    // A shell string runs `/bin/sh` by absolute path: an `sh` planted earlier on PATH never runs it.
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    if (argv.length === 0) throw new SandboxError('exec needs a command (empty argv)');
    const cwd = options.cwd === undefined ? this.workdir : await this.paths.real(options.cwd);
    const cwdStat = await stat(cwd).catch(() => undefined);
    if (!cwdStat?.isDirectory()) throw new SandboxError(`exec cwd is not a directory in sandbox ${this.id}: ${options.cwd}`);
    const env = { ...this.baseEnv, PWD: cwd, ...options.env };
    const run = runProcessGroup({
      argv: this.namespace ? this.namespace.wrap(argv, cwd) : argv,
      cwd,
      env,
      ...(options.stdin !== undefined && { stdin: options.stdin }),
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.signal && { signal: options.signal }),
      ...(options.onStdout && { onStdout: options.onStdout }),
      ...(options.onStderr && { onStderr: options.onStderr }),
      ...(this.maxOutputBytes !== undefined && { maxOutputBytes: this.maxOutputBytes }),
      onStart: (group) => this.groups.add(group),
    });
    this.running.add(run);
    try {
      const result = await run;
      if (this.stopped) throw new SandboxError(`sandbox ${this.id} was stopped while running: ${argv.join(' ').slice(0, 200)}`);
      return result;
    } finally {
      this.running.delete(run);
      this.forgetDeadGroups();
    }
  }

  private forgetDeadGroups(): void {
    for (const group of this.groups) {
      if (!killProcessGroup(group, 0)) this.groups.delete(group);
    }
  }

  async readFile(path: string, options: { maxBytes?: number } = {}): Promise<Uint8Array> {
    this.assertRunning('readFile');
    const real = await this.paths.real(path);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      // O_NONBLOCK: opening a FIFO planted at the path must not block until a writer comes.
      handle = await open(real, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (error) {
      throw new SandboxError(
        `cannot read ${path} in sandbox ${this.id}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
        { cause: error },
      );
    }
    try {
      // Stat the opened file before reading a byte: type and size are checked without reading it.
      const info = await handle.stat();
      if (!info.isFile()) throw new SandboxError(`not a regular file in sandbox ${this.id}: ${path}`);
      if (options.maxBytes !== undefined && info.size > options.maxBytes) {
        throw new SandboxError(`${path} in sandbox ${this.id} is ${info.size} bytes (limit ${options.maxBytes})`);
      }
      const bytes = new Uint8Array(await handle.readFile());
      if (options.maxBytes !== undefined && bytes.byteLength > options.maxBytes) {
        throw new SandboxError(`${path} in sandbox ${this.id} grew past ${options.maxBytes} bytes while read`);
      }
      return bytes;
    } finally {
      await handle.close();
    }
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    this.assertRunning('writeFile');
    const real = await this.paths.real(path);
    await mkdir(dirname(real), { recursive: true }).catch((error: unknown) => {
      throw new SandboxError(
        `cannot write ${path} in sandbox ${this.id}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
        { cause: error },
      );
    });
    // The parent may have been created through a path checked above; check again after mkdir.
    const parent = await realpath(dirname(real));
    if (!this.paths.contains(parent)) throw new SandboxError(`path escapes the sandbox: ${path}`);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(
        real,
        fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK,
        options.mode ?? 0o644,
      );
    } catch (error) {
      throw new SandboxError(
        `cannot write ${path} in sandbox ${this.id}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
        { cause: error },
      );
    }
    try {
      // Truncate only once the file is known to be a regular file with one name: a hard link
      // planted at the path (to a host file) or a FIFO is refused, never written through.
      const info = await handle.stat();
      if (!info.isFile()) throw new SandboxError(`cannot write ${path} in sandbox ${this.id}: not a regular file`);
      if (info.nlink > 1)
        throw new SandboxError(`cannot write ${path} in sandbox ${this.id}: it is a hard link (${info.nlink} names)`);
      await handle.truncate(0);
      await handle.writeFile(data);
      if (options.mode !== undefined) await handle.chmod(options.mode);
    } finally {
      await handle.close();
    }
  }

  async upload(hostPath: string, sandboxPath: string): Promise<void> {
    this.assertRunning('upload');
    const source = await stat(hostPath).catch((error: unknown) => {
      throw new SandboxError(`upload source does not exist on the host: ${hostPath}`, { cause: error });
    });
    const target = await this.paths.real(sandboxPath);
    await mkdir(dirname(target), { recursive: true });
    if (source.isDirectory()) {
      await cp(hostPath, target, { recursive: true, verbatimSymlinks: true, force: true });
    } else {
      const existing = await lstat(target).catch(() => undefined);
      if (existing?.isSymbolicLink()) throw new SandboxError(`upload target is a symlink: ${sandboxPath}`);
      await copyFile(hostPath, target);
      await chmod(target, source.mode & 0o7777);
    }
  }

  async download(sandboxPath: string, hostPath: string, options: { maxBytes?: number } = {}): Promise<void> {
    this.assertRunning('download');
    const source = await this.paths.real(sandboxPath);
    const info = await lstat(source).catch((error: unknown) => {
      throw new SandboxError(`cannot download ${sandboxPath} from sandbox ${this.id}: it does not exist`, { cause: error });
    });
    if (options.maxBytes !== undefined) {
      const size = await treeSize(source, options.maxBytes);
      if (size > options.maxBytes) {
        throw new SandboxError(`cannot download ${sandboxPath}: over ${options.maxBytes} bytes (limit)`);
      }
    }
    await mkdir(dirname(hostPath), { recursive: true });
    if (info.isDirectory()) {
      // Symlinks are copied as links, never followed: a link to a host file must not leak its content.
      await cp(source, hostPath, { recursive: true, verbatimSymlinks: true, force: true });
    } else if (info.isFile()) {
      await copyFile(source, hostPath);
      await chmod(hostPath, info.mode & 0o7777);
    } else {
      throw new SandboxError(`cannot download ${sandboxPath}: not a file or directory`);
    }
  }

  async alive(): Promise<boolean> {
    return !this.stopped && existsSync(this.root);
  }

  async reachHost(hostUrl: string): Promise<string> {
    return hostUrl;
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopNow();
    return this.stopping;
  }

  /**
   * Kills every process the sandbox's commands started, keeping its files: with a PID namespace
   * all of them, whatever they did to their process group (setsid, double fork, nohup); without,
   * the process groups plus every process found working under, or naming, this sandbox's root.
   */
  async killAll(): Promise<void> {
    for (const group of this.groups) killProcessGroup(group, 'SIGKILL');
    try {
      if (this.namespace) await this.namespace.killAll();
      else await killAllUnder(this.root);
    } finally {
      // Wait for the killed commands to report (their pipes close once the group is gone).
      await Promise.allSettled([...this.running]);
      this.groups.clear();
    }
  }

  private async stopNow(): Promise<void> {
    this.stopped = true;
    try {
      await this.killAll();
    } finally {
      await removeSandboxRoot(this.root);
      await rm(this.metadataPath, { force: true });
      liveSandboxes.delete(this);
      this.slot.release();
    }
  }

  /** Synchronous stop for process exit: kills the process groups and removes the directory. */
  stopSync(): void {
    this.stopped = true;
    for (const group of this.groups) killProcessGroup(group, 'SIGKILL');
    this.namespace?.killSync();
    try {
      const info = lstatSync(this.root);
      if (info.isDirectory() && realpathSync(this.root) === this.root) rmSync(this.root, { recursive: true, force: true });
      else rmSync(this.root, { force: true });
      rmSync(this.metadataPath, { force: true });
    } catch {
      // Best effort at exit: the next runtime start sweeps what is left.
    }
  }
}

/**
 * Makes a sandbox's directory `root` after its owner record (`<root>.sandbox.json`:
 * pid, host, creation time, labels), written whole and then renamed into place, so a directory
 * never exists without an owner record, even when the process dies half-way through a create.
 * Returns the metadata path.
 */
async function makeOwnedDirectory(root: string, labels: Record<string, string>): Promise<string> {
  const metadataPath = `${root}${METADATA_SUFFIX}`;
  const metadata = JSON.stringify({ pid: process.pid, host: hostname(), createdAt: new Date().toISOString(), labels });
  await writeFile(`${metadataPath}.partial`, metadata);
  await rename(`${metadataPath}.partial`, metadataPath);
  await mkdir(root);
  return metadataPath;
}

/**
 * The `local` runtime: each sandbox is a directory under `root` with `work/`, `home/` and `tmp/`,
 * commands run by `sh -c` (or an argv) in their own process group with a minimal environment
 * (`PATH`, `HOME`, `TMPDIR`, `LANG`, `USER`, `SANDBOX_ROOT`). No container: for debugging and
 * trusted programs only.
 */
export class LocalRuntime implements Runtime {
  readonly id = 'local';
  readonly capabilities: RuntimeCapabilities = { container: false, networkIsolation: false };
  private readonly options: LocalRuntimeOptions;
  private readonly rootDir: string;
  private readonly limiter: CreationLimiter;
  private readonly logger: RuntimeLogger | undefined;
  private readonly sandboxes = new Set<LocalSandbox>();
  private swept: Promise<void> | undefined;

  constructor(options: LocalRuntimeOptions & { logger?: RuntimeLogger } = {}) {
    const { logger, ...rest } = options;
    this.options = parseRuntimeOptions({ schema: LocalRuntimeOptionsSchema, value: rest, what: 'local' });
    if (this.options.egress !== undefined)
      throw new ConfigError(
        'local.egress: the local runtime cannot enforce an egress policy (its sandboxes share the host network); use runtime = "docker"',
      );
    this.rootDir = this.options.root ?? perUserTempDir('troupe-sandboxes');
    this.limiter = new CreationLimiter(this.options, this.id);
    this.logger = logger;
  }

  /** Sandboxes of this runtime that have not been stopped. */
  get activeSandboxes(): number {
    return this.sandboxes.size;
  }

  /** The environment every command of the sandbox rooted at `root` starts from (no secrets). */
  private baseEnv(root: string, env: Record<string, string> | undefined): Record<string, string> {
    return {
      PATH: this.options.path ?? `${dirname(process.execPath)}:${SYSTEM_PATH}`,
      HOME: join(root, 'home'),
      TMPDIR: join(root, 'tmp'),
      LANG: 'C.UTF-8',
      USER: safeUserName(),
      SANDBOX_ROOT: root,
      ...withoutSecrets(this.options.env),
      ...withoutSecrets(env),
    };
  }

  async createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    const sandboxOptions = parseRuntimeOptions({ schema: SandboxOptionsSchema, value: options, what: 'sandbox' });
    for (const field of ['image', 'cpu', 'memoryMb'] as const) {
      if (sandboxOptions[field] !== undefined) this.logger?.warn(`local runtime ignores sandbox option '${field}'`);
    }
    if (sandboxOptions.network === false)
      this.logger?.warn('local runtime cannot switch the network off; commands keep the host network');
    const slot = await this.limiter.acquire();
    try {
      ensureOwnedDirectory(this.rootDir);
      if (this.options.sweep !== false) {
        this.swept ??= this.sweepLeftovers();
        await this.swept;
      }
      const id = `local-${randomBytes(6).toString('hex')}`;
      const root = join(await realpath(this.rootDir), id);
      const metadataPath = await makeOwnedDirectory(root, sandboxOptions.labels ?? {});
      const paths = new LocalPaths(root, join(root, 'work'));
      const workdir = sandboxOptions.workdir === undefined ? join(root, 'work') : paths.lexical(sandboxOptions.workdir);
      await Promise.all([mkdir(workdir, { recursive: true }), mkdir(join(root, 'home')), mkdir(join(root, 'tmp'))]);
      const sandbox = new LocalSandbox({
        id,
        root,
        workdir,
        metadataPath,
        baseEnv: this.baseEnv(root, sandboxOptions.env),
        maxOutputBytes: this.options.maxOutputBytes,
        namespace: this.useNamespace() ? new PidNamespace() : undefined,
        slot: {
          release: () => {
            this.sandboxes.delete(sandbox);
            slot.release();
          },
        },
      });
      this.sandboxes.add(sandbox);
      liveSandboxes.add(sandbox);
      installExitHook();
      return sandbox;
    } catch (error) {
      slot.release();
      if (SandboxError.isInstance(error) || ConfigError.isInstance(error)) throw error;
      throw new SandboxError(`local sandbox could not be created under ${this.rootDir}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  /** Stops every sandbox this runtime still has. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes].map((sandbox) => sandbox.stop()));
  }

  private useNamespace(): boolean {
    if (this.options.pidNamespace === false) return false;
    const available = pidNamespacesSupported();
    if (this.options.pidNamespace === true && !available) {
      throw new ConfigError('runtime.pidNamespace: PID namespaces need root and util-linux unshare/nsenter on Linux');
    }
    return available;
  }

  /**
   * Removes sandboxes whose owning process (on this host) is gone, and debris older than
   * {@link ORPHAN_AGE_MS} that has no readable owner record (a process killed mid-create).
   */
  private async sweepLeftovers(): Promise<void> {
    const entries = await readdir(this.rootDir).catch(() => [] as string[]);
    const names = new Set(entries);
    const old = async (path: string) => {
      const info = await stat(path).catch(() => undefined);
      return info !== undefined && Date.now() - info.mtimeMs > ORPHAN_AGE_MS;
    };
    const remove = async (sandboxName: string) => {
      await removeSandboxRoot(join(this.rootDir, sandboxName));
      await rm(join(this.rootDir, `${sandboxName}${METADATA_SUFFIX}`), { force: true });
      await rm(join(this.rootDir, `${sandboxName}${METADATA_SUFFIX}.partial`), { force: true });
    };
    await Promise.all(
      entries.map(async (name) => {
        try {
          if (name.endsWith(METADATA_SUFFIX)) {
            const sandboxName = name.slice(0, -METADATA_SUFFIX.length);
            const parsed = SweepMetadataSchema.safeParse(await readJson(join(this.rootDir, name)));
            if (!parsed.success) {
              if (await old(join(this.rootDir, name))) await remove(sandboxName);
              return;
            }
            if (parsed.data.host === hostname() && !processExists(parsed.data.pid)) await remove(sandboxName);
          } else if (name.startsWith('local-') && !name.includes('.') && !names.has(`${name}${METADATA_SUFFIX}`)) {
            if (await old(join(this.rootDir, name))) await remove(name);
          }
        } catch {
          // Another process may be sweeping the same entry: leave it.
        }
      }),
    );
  }
}

/** Bytes of the regular files under `path` (links not followed), counted from `lstat` until past `limit`. */
async function treeSize(path: string, limit: number): Promise<number> {
  const info = await lstat(path);
  if (info.isFile()) return info.size;
  if (!info.isDirectory()) return 0;
  let total = 0;
  for (const name of await readdir(path)) {
    total += await treeSize(join(path, name), limit - total);
    if (total > limit) break;
  }
  return total;
}

/**
 * Removes a sandbox directory without ever following a link out of it: the root is checked with
 * `lstat` and `realpath` first, and a root the sandbox's programs replaced by a symlink (to a host
 * directory) is unlinked, never recursed into. Inside, `rm` unlinks links instead of following.
 */
async function removeSandboxRoot(root: string): Promise<void> {
  const info = await lstat(root).catch(() => undefined);
  if (!info) return;
  const real = await realpath(root).catch(() => undefined);
  if (info.isDirectory() && real === root) {
    await rm(root, { recursive: true, force: true, maxRetries: 3 });
  } else {
    await rm(root, { force: true });
  }
}

const SweepMetadataSchema = z.object({ pid: z.number(), host: z.string() });

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'troupe';
  }
}

/** Config accepted by {@link createRuntime}: the built-in runtime type and its options. */
export type CreateRuntimeOptions = { type?: 'local'; logger?: RuntimeLogger } & LocalRuntimeOptions;

/**
 * Makes a built-in runtime. Only `local` lives in @troupe/verifiers; container and cloud runtimes
 * come from their packages (`@troupe/runtime-docker`, `-e2b`, `-daytona`, `-prime`, `-kubernetes`).
 */
export function createRuntime(options: CreateRuntimeOptions = {}): Runtime {
  const { type = 'local', ...rest } = options;
  if (type !== 'local') {
    throw new ConfigError(
      `runtime.type: '${String(type)}' is not built in; import its factory from @troupe/runtime-${String(type)}`,
    );
  }
  return new LocalRuntime(rest);
}
