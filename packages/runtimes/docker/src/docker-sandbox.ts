import { mkdir, stat } from 'node:fs/promises';
import { dirname, posix } from 'node:path';
import type { ExecOptions, ExecResult, Sandbox } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';
import type { CreationSlot } from '@troupe/verifiers/internal';
import { EXEC_PID_DIR } from '@troupe/verifiers/internal';
import type Docker from 'dockerode';
import { runDockerExec } from './docker-exec.ts';
import type { EgressRoute } from './egress.ts';
import { HostForwarder } from './host-forwarder.ts';
import { extractToHost, packFile, packHostPath, readFirstEntry } from './tar-archive.ts';

/** What a {@link DockerSandbox} is made from (the runtime creates and starts the container). */
export interface DockerSandboxInit {
  docker: Docker;
  container: Docker.Container;
  id: string;
  /** The runtime's id (`docker`, or `podman` for the engine behind @troupe/runtime-podman); default `docker`. */
  runtime?: string;
  workdir: string;
  /** Host network (`network: true`): host loopback URLs work unchanged. */
  hostNetwork: boolean;
  maxOutputBytes: number;
  slot: CreationSlot;
  /** The Node binary run (in the container's network namespace) to forward host ports. */
  nodePath: string;
  /** Destinations forwarded into the container (its egress allow list); empty for none. */
  egress: EgressRoute[];
  onStopped: () => void;
}

const MAX_SYMLINK_HOPS = 8;

function isNotFound(error: unknown): boolean {
  return (error as { statusCode?: number }).statusCode === 404;
}

/** A container kept alive by a sleeping shell; commands are `docker exec`s, files go through the archive API. */
export class DockerSandbox implements Sandbox {
  readonly runtime: string;
  readonly id: string;
  readonly workdir: string;
  private readonly docker: Docker;
  private readonly container: Docker.Container;
  private readonly init: DockerSandboxInit;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private execCount = 0;
  private forwarder: HostForwarder | undefined;

  constructor(init: DockerSandboxInit) {
    this.init = init;
    this.docker = init.docker;
    this.container = init.container;
    this.id = init.id;
    this.runtime = init.runtime ?? 'docker';
    this.workdir = init.workdir;
  }

  /** The container id. */
  get containerId(): string {
    return this.container.id;
  }

  private assertRunning(operation: string): void {
    if (this.stopped) throw new SandboxError(`sandbox ${this.id} is stopped (${operation})`);
  }

  private resolve(path: string): string {
    if (typeof path !== 'string' || path.length === 0) throw new SandboxError('empty sandbox path');
    if (path.includes('\0')) throw new SandboxError(`sandbox path contains a NUL byte: ${JSON.stringify(path)}`);
    return posix.resolve(this.workdir, path);
  }

  private async wrap<T>(operation: string, action: () => Promise<T>): Promise<T> {
    this.assertRunning(operation);
    try {
      return await action();
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error;
      if (this.stopped) throw new SandboxError(`sandbox ${this.id} was stopped during ${operation}`, { cause: error });
      const alive = await this.alive();
      const message = (error as Error).message ?? String(error);
      throw new SandboxError(
        `${operation} failed in ${this.runtime} sandbox ${this.id}${alive ? '' : ' (container is not running)'}: ${message}`,
        { cause: error },
      );
    }
  }

  exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    // A shell string runs `/bin/sh` by absolute path: an `sh` planted earlier on PATH never runs it.
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    if (argv.length === 0) return Promise.reject(new SandboxError('exec needs a command (empty argv)'));
    const sequence = ++this.execCount;
    return this.wrap('exec', async () => {
      const result = await runDockerExec({
        docker: this.docker,
        container: this.container,
        argv,
        cwd: options.cwd === undefined ? this.workdir : this.resolve(options.cwd),
        env: options.env ?? {},
        options,
        pidFile: `${EXEC_PID_DIR}/${sequence}.pid`,
        maxOutputBytes: this.init.maxOutputBytes,
      });
      // An exec whose working directory does not exist fails before the wrapper runs.
      if (
        result.exitCode === 126 &&
        /no such file or directory/i.test(result.stdout + result.stderr) &&
        options.cwd !== undefined
      ) {
        throw new SandboxError(`exec cwd is not a directory in sandbox ${this.id}: ${options.cwd}`);
      }
      return result;
    });
  }

  readFile(path: string, options: { maxBytes?: number } = {}): Promise<Uint8Array> {
    return this.wrap('readFile', async () => {
      let target = this.resolve(path);
      for (let hop = 0; hop <= MAX_SYMLINK_HOPS; hop++) {
        let archive: NodeJS.ReadableStream;
        try {
          archive = await this.container.getArchive({ path: target });
        } catch (error) {
          if (isNotFound(error))
            throw new SandboxError(`cannot read ${path} in sandbox ${this.id}: no such file`, { cause: error });
          throw error;
        }
        // The tar header is the stat: type and size are checked before any content is read.
        let entry: Awaited<ReturnType<typeof readFirstEntry>>;
        try {
          entry = await readFirstEntry(archive, options);
        } catch (error) {
          throw new SandboxError(`cannot read ${path} in sandbox ${this.id}: ${(error as Error).message}`, { cause: error });
        }
        const { header, data } = entry;
        if (header.type === 'file') return new Uint8Array(data);
        if (header.type === 'symlink' && header.linkname) {
          target = posix.resolve(posix.dirname(target), header.linkname);
          continue;
        }
        throw new SandboxError(`not a regular file in sandbox ${this.id}: ${path}`);
      }
      throw new SandboxError(`too many symlinks reading ${path} in sandbox ${this.id}`);
    });
  }

  writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    return this.wrap('writeFile', async () => {
      const target = this.resolve(path);
      if (target === '/') throw new SandboxError(`cannot write the sandbox root: ${path}`);
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      await this.putArchive(posix.dirname(target), () =>
        packFile({ name: posix.basename(target), data: bytes, mode: options.mode ?? 0o644 }),
      );
    });
  }

  upload(hostPath: string, sandboxPath: string): Promise<void> {
    return this.wrap('upload', async () => {
      await stat(hostPath).catch((error: unknown) => {
        throw new SandboxError(`upload source does not exist on the host: ${hostPath}`, { cause: error });
      });
      const target = this.resolve(sandboxPath);
      if (target === '/') throw new SandboxError(`cannot upload onto the sandbox root: ${sandboxPath}`);
      await this.putArchive(posix.dirname(target), () => packHostPath({ hostPath, name: posix.basename(target) }));
    });
  }

  download(sandboxPath: string, hostPath: string, options: { maxBytes?: number } = {}): Promise<void> {
    return this.wrap('download', async () => {
      const source = this.resolve(sandboxPath);
      let archive: NodeJS.ReadableStream;
      try {
        archive = await this.container.getArchive({ path: source });
      } catch (error) {
        if (isNotFound(error))
          throw new SandboxError(`cannot download ${sandboxPath} from sandbox ${this.id}: it does not exist`, { cause: error });
        throw error;
      }
      await mkdir(dirname(hostPath), { recursive: true });
      await extractToHost({
        archive,
        topName: source === '/' ? '.' : posix.basename(source),
        hostPath,
        ...(options.maxBytes !== undefined && { maxBytes: options.maxBytes }),
      });
    });
  }

  /** Puts an archive into `directory`, creating the directory first when it does not exist. */
  private async putArchive(directory: string, makeArchive: () => NodeJS.ReadableStream): Promise<void> {
    try {
      await this.container.putArchive(makeArchive(), { path: directory });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const made = await this.exec(['mkdir', '-p', directory]);
      if (made.exitCode !== 0) throw new SandboxError(`cannot create ${directory} in sandbox ${this.id}: ${made.stderr.trim()}`);
      await this.container.putArchive(makeArchive(), { path: directory });
    }
  }

  /**
   * Kills every process in the container — background jobs, `setsid` and double-fork escapes,
   * daemons — by restarting it (SIGKILL, no grace): the filesystem stays as it was left, the
   * keep-alive shell starts again, and a forwarder into the old network namespace is dropped.
   */
  killAll(): Promise<void> {
    return this.wrap('killAll', async () => {
      await this.forwarder?.close();
      this.forwarder = undefined;
      await this.container.kill({ signal: 'SIGKILL' }).catch((error: unknown) => {
        // 409: the container is not running (already killed).
        if ((error as { statusCode?: number }).statusCode !== 409) throw error;
      });
      await this.container.wait({ condition: 'not-running' }).catch(() => undefined);
      await this.container.start();
      await this.openEgress();
    });
  }

  /** Starts a forwarder for every allowed egress destination (again after a restart: new network namespace). */
  async openEgress(): Promise<void> {
    if (this.init.egress.length === 0) return;
    const forwarder = await this.hostForwarder();
    for (const route of this.init.egress)
      await forwarder.forward({ hostName: route.hostName, port: route.port, listenHost: route.listenHost });
  }

  private async hostForwarder(): Promise<HostForwarder> {
    if (!this.forwarder) {
      const info = await this.container.inspect();
      if (!info.State.Pid) throw new SandboxError(`sandbox ${this.id} has no running process to forward into`);
      this.forwarder = new HostForwarder({ containerPid: info.State.Pid, nodePath: this.init.nodePath });
    }
    return this.forwarder;
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      const info = await this.container.inspect();
      return info.State.Running === true;
    } catch {
      return false;
    }
  }

  /**
   * With `network: true` (host network) the URL is unchanged. Without network, the host port is
   * forwarded into the container's own loopback (see {@link HostForwarder}), so the same
   * `http://127.0.0.1:<port>` works inside and nothing else is reachable.
   */
  async reachHost(hostUrl: string): Promise<string> {
    this.assertRunning('reachHost');
    const url = new URL(hostUrl);
    if (this.init.hostNetwork) return hostUrl;
    const loopback = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(url.hostname);
    if (!loopback)
      throw new SandboxError(`sandbox ${this.id} has no network: ${url.host} is unreachable (create it with network: true)`);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    await (await this.hostForwarder()).forward({
      hostName: url.hostname === 'localhost' ? '127.0.0.1' : url.hostname.replace(/^\[|\]$/g, ''),
      port,
    });
    url.hostname = '127.0.0.1';
    return url.toString().replace(/\/$/, hostUrl.endsWith('/') ? '/' : '');
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopNow();
    return this.stopping;
  }

  private async stopNow(): Promise<void> {
    this.stopped = true;
    try {
      await this.forwarder?.close();
      await this.container.remove({ force: true, v: true }).catch((error: unknown) => {
        if (!isNotFound(error) && (error as { statusCode?: number }).statusCode !== 409) throw error;
      });
    } finally {
      this.init.slot.release();
      this.init.onStopped();
    }
  }
}
