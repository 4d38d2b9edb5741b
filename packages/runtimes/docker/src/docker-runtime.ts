import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ConfigError,
  parseRuntimeOptions,
  type Runtime,
  type RuntimeCapabilities,
  type Sandbox,
  SandboxError,
  type SandboxOptions,
  SandboxOptionsSchema,
} from '@troupe/verifiers';
import {
  CreationLimiter,
  DEFAULT_MAX_OUTPUT_BYTES,
  ExecRuntimeOptionsSchema,
  processExists,
  type RuntimeLogger,
  withoutSecrets,
} from '@troupe/verifiers/internal';
import Docker from 'dockerode';
import { z } from 'zod';
import { DockerSandbox } from './docker-sandbox.ts';
import { type EgressRoute, EgressSchema, egressHosts, egressRoutes } from './egress.ts';

/** Label on every container this runtime creates. */
export const SANDBOX_LABEL = 'troupe.sandbox';
/** Label naming the runtime instance (one per `DockerRuntime`). */
export const RUN_LABEL = 'troupe.run';
const OWNER_PID_LABEL = 'troupe.owner-pid';
const OWNER_HOST_LABEL = 'troupe.owner-host';

/** Config of the `docker` runtime. Sandbox options (`image`, `workdir`, …) override the defaults here. */
export const DockerRuntimeOptionsSchema = ExecRuntimeOptionsSchema.extend({
  /** Engine socket (default `/var/run/docker.sock`); ignored when a `docker` client is injected. */
  socketPath: z.string().min(1).optional(),
  /** Default image (default `troupe-debian:bookworm`, built by tooling/scripts/docker-engine.sh). */
  image: z.string().min(1).optional(),
  /** Default working directory inside the container (default `/work`). */
  workdir: z.string().startsWith('/').optional(),
  /** Default CPU limit (cores). */
  cpu: z.number().positive().optional(),
  /** Default memory limit in MiB. */
  memoryMb: z.number().positive().optional(),
  /** Allow network by default (host network); off means `NetworkMode: none`. */
  network: z.boolean().optional(),
  /** Environment of every command; names matching /API_KEY|SECRET|TOKEN/i are dropped. */
  env: z.record(z.string(), z.string()).optional(),
  /** Labels added to every container. */
  labels: z.record(z.string(), z.string()).optional(),
  /** Pull a missing image from its registry before failing (default true). */
  pull: z.boolean().optional(),
  /** Remove containers left by dead processes of this host when the first sandbox is created (default true). */
  sweep: z.boolean().optional(),
  /**
   * Outbound network as an allow list (`{ allow = ["host:port", …] }`): the container has no
   * network and only these destinations are forwarded into it. Excludes `network: true`.
   */
  egress: EgressSchema.optional(),
  /** Node binary used to forward host ports into no-network containers (default: this process's). */
  nodePath: z.string().min(1).optional(),
}).strict();
/**
 * The `docker` runtime's options, as `new DockerRuntime(options)` and the agent config's
 * `runtime = { id = "docker", … }` take them; {@link DockerRuntimeOptionsSchema} documents each
 * field, its unit and its default.
 */
export type DockerRuntimeOptions = z.infer<typeof DockerRuntimeOptionsSchema>;

/**
 * Why `egress = { block = [...] }` is refused rather than half-enforced: a block list gives the
 * container a route out and filters it, which needs packet-filter rules (iptables in the engine's
 * `DOCKER-USER` chain or in the container's network namespace) that this runtime does not own —
 * and the CI engine runs with `--bridge=none --iptables=false`, where the only route out is the
 * host network, which has no per-container boundary at all. An allow list needs no route: the
 * container keeps `NetworkMode: none` and each allowed destination gets a forwarder.
 */
const BLOCK_REFUSED =
  'a block list is not offered: it needs a route out of the container plus packet-filter rules this runtime does not manage (with network = true the container shares the host network, which has no per-container boundary to filter at); list what the sandbox may reach with egress = { allow = ["host:port", …] } instead';

/**
 * Sandboxes as Docker containers on `dockerode`: one container per sandbox (kept alive by a
 * sleeping shell under `docker-init`), labelled, network off unless allowed, removed on stop;
 * leftovers of dead processes are swept by label.
 */
export class DockerRuntime implements Runtime {
  /**
   * The runtime id: names the options in errors (`<id>.<field>`), prefixes sandbox ids and is each
   * sandbox's `runtime`. A subclass for another engine speaking the Docker API (podman) overrides it.
   */
  static readonly runtimeId: string = 'docker';
  /** The engine socket used when neither `socketPath` nor a `docker` client is given. */
  static readonly defaultSocketPath: string = '/var/run/docker.sock';
  readonly id: string;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: true };
  /** Value of the `troupe.run` label on this runtime's containers. */
  readonly runId = randomBytes(6).toString('hex');
  readonly docker: Docker;
  private readonly options: DockerRuntimeOptions;
  private readonly limiter: CreationLimiter;
  private readonly egress: EgressRoute[] | undefined;
  private readonly logger: RuntimeLogger | undefined;
  private readonly sandboxes = new Set<DockerSandbox>();
  private swept: Promise<unknown> | undefined;

  constructor(options: DockerRuntimeOptions & { docker?: Docker; logger?: RuntimeLogger } = {}) {
    const { docker, logger, ...rest } = options;
    const engine = new.target as typeof DockerRuntime;
    this.id = engine.runtimeId;
    const egress: unknown = (rest as { egress?: unknown }).egress;
    if (egress && typeof egress === 'object' && 'block' in egress)
      throw new ConfigError(`${this.id}.egress.block: ${BLOCK_REFUSED}`);
    this.options = parseRuntimeOptions({ schema: DockerRuntimeOptionsSchema, value: rest, what: this.id });
    this.docker = docker ?? new Docker({ socketPath: this.options.socketPath ?? engine.defaultSocketPath });
    this.limiter = new CreationLimiter(this.options, this.id);
    this.logger = logger;
    if (this.options.egress) {
      if (this.options.network) throw new ConfigError(`${this.id}.egress: an allow list replaces network: true; set one of them`);
      try {
        this.egress = egressRoutes(this.options.egress);
      } catch (error) {
        throw new ConfigError(`${this.id}.${(error as Error).message}`);
      }
    }
  }

  /** Sandboxes of this runtime that have not been stopped. */
  get activeSandboxes(): number {
    return this.sandboxes.size;
  }

  /**
   * The engine answers `GET /_ping` within 10 s; otherwise a `SandboxError` naming the socket, the
   * cause and how to point the runtime at a running engine.
   */
  async preflight(): Promise<void> {
    const modem = (this.docker as { modem?: { socketPath?: unknown; host?: unknown } }).modem;
    const where = String(modem?.socketPath ?? modem?.host ?? this.options.socketPath ?? 'its Docker client');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), 10_000);
    });
    let reason: string | undefined;
    let cause: unknown;
    try {
      if ((await Promise.race([this.docker.ping(), late])) === 'late') reason = 'no answer in 10 s';
    } catch (error) {
      cause = error;
      reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    } finally {
      clearTimeout(timer);
    }
    if (reason !== undefined)
      throw new SandboxError(
        `${this.id}: the engine at ${where} does not answer (${reason}); start it, or point the runtime at a running one (${this.id}.socketPath)`,
        cause === undefined ? undefined : { cause },
      );
  }

  async createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    const sandboxOptions = parseRuntimeOptions({ schema: SandboxOptionsSchema, value: options, what: 'sandbox' });
    if (this.options.sweep !== false) {
      this.swept ??= this.sweepLeftovers().catch((error: unknown) => {
        this.logger?.warn(`${this.id} runtime could not sweep leftovers: ${(error as Error).message}`);
      });
      await this.swept;
    }
    const slot = await this.limiter.acquire();
    const id = `${this.id}-${randomBytes(6).toString('hex')}`;
    const image = sandboxOptions.image ?? this.options.image ?? 'troupe-debian:bookworm';
    const workdir = sandboxOptions.workdir ?? this.options.workdir ?? '/work';
    const network = sandboxOptions.network ?? this.options.network ?? false;
    if (network && this.egress)
      throw new ConfigError(`sandbox.network: this ${this.id} runtime has an egress allow list; network: true would bypass it`);
    const cpu = sandboxOptions.cpu ?? this.options.cpu;
    const memoryMb = sandboxOptions.memoryMb ?? this.options.memoryMb;
    const env = { ...withoutSecrets(this.options.env), ...withoutSecrets(sandboxOptions.env) };
    const spec: Docker.ContainerCreateOptions = {
      name: `troupe-${id}`,
      Image: image,
      Entrypoint: ['/bin/sh', '-c'],
      // A fixed PATH: after killAll() restarts the container, a `sleep` the solver planted earlier
      // on the image's PATH must not become the container's keep-alive process.
      Cmd: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin; trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
      WorkingDir: workdir,
      Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      Labels: {
        ...this.options.labels,
        ...sandboxOptions.labels,
        [SANDBOX_LABEL]: '1',
        [RUN_LABEL]: this.runId,
        'troupe.sandbox-id': id,
        [OWNER_PID_LABEL]: String(process.pid),
        [OWNER_HOST_LABEL]: hostname(),
      },
      AttachStdin: false,
      AttachStdout: false,
      AttachStderr: false,
      OpenStdin: false,
      Tty: false,
      HostConfig: {
        Init: true,
        NetworkMode: network ? 'host' : 'none',
        ...(this.egress && { ExtraHosts: egressHosts(this.egress) }),
        AutoRemove: false,
        ...(cpu !== undefined && { NanoCpus: Math.round(cpu * 1e9) }),
        ...(memoryMb !== undefined && { Memory: Math.round(memoryMb * 1024 * 1024) }),
      },
    };
    let container: Docker.Container | undefined;
    try {
      container = await this.createContainer(spec);
      await container.start();
      const sandbox: DockerSandbox = new DockerSandbox({
        docker: this.docker,
        container,
        id,
        runtime: this.id,
        workdir,
        hostNetwork: network,
        maxOutputBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        slot,
        nodePath: this.options.nodePath ?? process.execPath,
        egress: this.egress ?? [],
        onStopped: () => this.sandboxes.delete(sandbox),
      });
      this.sandboxes.add(sandbox);
      await sandbox.openEgress().catch(async (error: unknown) => {
        await sandbox.stop();
        throw error;
      });
      return sandbox;
    } catch (error) {
      slot.release();
      await container?.remove({ force: true }).catch(() => undefined);
      if (SandboxError.isInstance(error) || ConfigError.isInstance(error)) throw error;
      throw new SandboxError(`${this.id} sandbox could not be created from image ${image}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  private async createContainer(spec: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    try {
      return await this.docker.createContainer(spec);
    } catch (error) {
      const missingImage = (error as { statusCode?: number }).statusCode === 404 && /image/i.test((error as Error).message);
      if (!missingImage || this.options.pull === false) throw error;
      this.logger?.warn(`${this.id} runtime: pulling missing image ${spec.Image}`);
      const stream = await this.docker.pull(spec.Image as string);
      await new Promise<void>((resolve, reject) =>
        this.docker.modem.followProgress(stream, (pullError: Error | null) => (pullError ? reject(pullError) : resolve())),
      );
      return await this.docker.createContainer(spec);
    }
  }

  /** Removes containers labelled `troupe.sandbox` whose owning process on this host is gone. */
  async sweepLeftovers(): Promise<string[]> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: [`${SANDBOX_LABEL}=1`, `${OWNER_HOST_LABEL}=${hostname()}`] },
    });
    const removed: string[] = [];
    await Promise.all(
      containers
        .filter((info) => {
          const pid = Number(info.Labels?.[OWNER_PID_LABEL]);
          return Number.isInteger(pid) && pid > 0 && !processExists(pid);
        })
        .map(async (info) => {
          await this.docker
            .getContainer(info.Id)
            .remove({ force: true })
            .catch(() => undefined);
          removed.push(info.Id);
        }),
    );
    return removed;
  }

  /** Stops every sandbox this runtime still has. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes].map((sandbox) => sandbox.stop()));
  }
}

/** Makes a {@link DockerRuntime}. */
export function createDockerRuntime(
  options: DockerRuntimeOptions & { docker?: Docker; logger?: RuntimeLogger } = {},
): DockerRuntime {
  return new DockerRuntime(options);
}
