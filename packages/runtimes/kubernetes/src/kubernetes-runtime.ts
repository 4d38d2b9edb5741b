import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname, posix } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { CoreV1Api, Exec, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { extractToHost, packFile, packHostPath } from '@troupe/runtime-docker';
import {
  type ExecOptions,
  type ExecResult,
  RemoteRuntime,
  type RuntimeCapabilities,
  type Sandbox,
  SandboxError,
  type SandboxOptions,
} from '@troupe/verifiers';
import {
  type CreationSlot,
  DEFAULT_MAX_OUTPUT_BYTES,
  EXEC_PID_DIR,
  ExecOutputCollector,
  ExecRuntimeOptionsSchema,
  guardExec,
  killCommand,
  type RuntimeLogger,
  wrapWithPidFile,
} from '@troupe/verifiers/internal';
import { z } from 'zod';

/** Config of the `kubernetes` runtime. The cluster comes from an injected `KubeConfig`. */
export const KubernetesRuntimeOptionsSchema = ExecRuntimeOptionsSchema.extend({
  /**
   * Namespace of the pods (default `default`). Kubernetes takes only a DNS-1123 label; another name
   * fails here, naming the field, instead of at the first pod creation.
   */
  namespace: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
      'expected a DNS-1123 label (at most 63 of a-z, 0-9 and "-", alphanumeric at both ends)',
    )
    .optional(),
  /** Default image (a sandbox's `image` overrides it). */
  image: z.string().min(1).optional(),
  /** Working directory inside the pod (default `/work`). */
  workdir: z.string().startsWith('/').optional(),
  /** Labels added to every pod. */
  labels: z.record(z.string(), z.string()).optional(),
  /** Seconds to wait for a pod to run (default 120). */
  startTimeoutSeconds: z.number().int().positive().optional(),
}).strict();
/**
 * The `kubernetes` runtime's options, as `new KubernetesRuntime(options)` and the agent config's
 * `runtime = { id = "kubernetes", … }` take them; {@link KubernetesRuntimeOptionsSchema} documents
 * each field, its unit and its default.
 */
export type KubernetesRuntimeOptions = z.infer<typeof KubernetesRuntimeOptionsSchema>;

const CONTAINER = 'sandbox';
const KEEP_ALIVE = 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done';

/** Exit code from the status the API server sends on channel 3 when an exec ends. */
export function exitCodeOf(status: V1Status | undefined): number {
  if (!status || status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((each) => each.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : 1;
}

interface RawExec {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
  truncated: boolean;
}

/** One pod with one container kept alive by a sleeping shell; commands and files go over the exec API. */
export class KubernetesSandbox implements Sandbox {
  readonly runtime = 'kubernetes';
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private sequence = 0;

  constructor(
    private readonly init: {
      core: CoreV1Api;
      exec: Exec;
      namespace: string;
      podName: string;
      workdir: string;
      env: Record<string, string>;
      maxOutputBytes: number;
      slot: CreationSlot;
    },
  ) {}

  get id(): string {
    return this.init.podName;
  }

  get workdir(): string {
    return this.init.workdir;
  }

  private assertRunning(operation: string): void {
    if (this.stopped) throw new SandboxError(`sandbox ${this.id} is stopped (${operation})`);
  }

  private resolve(path: string): string {
    if (!path) throw new SandboxError('empty sandbox path');
    return posix.resolve(this.workdir, path);
  }

  /** One exec over the API server's websocket, with binary stdout and stderr. */
  private async raw(argv: string[], options: ExecOptions & { stdinStream?: Readable } = {}): Promise<RawExec> {
    this.assertRunning('exec');
    if (options.signal?.aborted) throw options.signal.reason;
    const pidFile = `${EXEC_PID_DIR}/${++this.sequence}.pid`;
    const cwd = options.cwd === undefined ? this.workdir : this.resolve(options.cwd);
    const env = { ...this.init.env, ...options.env };
    // Kubernetes exec has no cwd or env: a shell sets them, then execs the program.
    const command = wrapWithPidFile(
      [
        'sh',
        '-c',
        'cd "$0" || exit 126; exec "$@"',
        cwd,
        'env',
        ...Object.entries(env).map(([name, value]) => `${name}=${value}`),
        ...argv,
      ],
      pidFile,
    );
    const stdout = new ExecOutputCollector(this.init.maxOutputBytes, options.onStdout);
    const stderr = new ExecOutputCollector(this.init.maxOutputBytes, options.onStderr);
    const stdin = options.stdinStream ?? (options.stdin === undefined ? null : Readable.from([Buffer.from(options.stdin)]));
    const kill = () => void this.raw(killCommand(pidFile)).catch(() => undefined);
    const guard = guardExec({ timeoutMs: options.timeoutMs, signal: options.signal, kill });
    try {
      const status = await new Promise<V1Status | undefined>((resolve, reject) => {
        let settled = false;
        this.init.exec
          .exec(this.init.namespace, this.init.podName, CONTAINER, command, stdout, stderr, stdin, false, (received) => {
            settled = true;
            resolve(received);
          })
          .then((socket) => {
            socket.on('close', () => {
              if (!settled) resolve(undefined);
            });
            socket.on('error', reject);
          }, reject);
      });
      if (guard.aborted) throw options.signal?.reason ?? new SandboxError('exec aborted');
      return {
        exitCode: status ? exitCodeOf(status) : guard.timedOut ? 137 : 1,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        timedOut: guard.timedOut,
        truncated: stdout.truncated || stderr.truncated,
      };
    } catch (error) {
      if (SandboxError.isInstance(error) || guard.aborted) throw error;
      throw new SandboxError(`exec failed in kubernetes sandbox ${this.id}: ${(error as Error).message}`, { cause: error });
    } finally {
      guard.dispose();
    }
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const argv = typeof command === 'string' ? ['sh', '-c', command] : command;
    if (argv.length === 0) throw new SandboxError('exec needs a command (empty argv)');
    const started = performance.now();
    const result = await this.raw(argv, options);
    const out: ExecResult = {
      exitCode: result.exitCode,
      stdout: result.stdout.toString('utf8'),
      stderr: result.stderr.toString('utf8'),
      timedOut: result.timedOut,
      durationMs: performance.now() - started,
    };
    if (result.truncated) out.truncated = true;
    return out;
  }

  async readFile(path: string): Promise<Uint8Array> {
    const target = this.resolve(path);
    const result = await this.raw(['sh', '-c', '[ -f "$0" ] || { echo "no such file: $0" >&2; exit 2; }; cat "$0"', target]);
    if (result.exitCode !== 0)
      throw new SandboxError(`cannot read ${path} in kubernetes sandbox ${this.id}: ${result.stderr.toString().trim()}`);
    return new Uint8Array(result.stdout);
  }

  async writeFile(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
    const target = this.resolve(path);
    const archive = packFile({ name: posix.basename(target), data: Buffer.from(data), mode: options.mode ?? 0o644 });
    await this.untar(posix.dirname(target), archive, path);
  }

  async upload(hostPath: string, sandboxPath: string): Promise<void> {
    const target = this.resolve(sandboxPath);
    await this.untar(posix.dirname(target), packHostPath({ hostPath, name: posix.basename(target) }) as Readable, sandboxPath);
  }

  private async untar(directory: string, archive: NodeJS.ReadableStream, path: string): Promise<void> {
    const stream = new PassThrough();
    (archive as Readable).pipe(stream);
    const result = await this.raw(['sh', '-c', 'mkdir -p "$0" && tar -x -o -f - -C "$0"', directory], { stdinStream: stream });
    if (result.exitCode !== 0)
      throw new SandboxError(`cannot write ${path} in kubernetes sandbox ${this.id}: ${result.stderr.toString().trim()}`);
  }

  async download(sandboxPath: string, hostPath: string): Promise<void> {
    const source = this.resolve(sandboxPath);
    const result = await this.raw(['sh', '-c', 'cd "$(dirname "$0")" && tar -c -f - "$(basename "$0")"', source]);
    if (result.exitCode !== 0)
      throw new SandboxError(
        `cannot download ${sandboxPath} from kubernetes sandbox ${this.id}: ${result.stderr.toString().trim()}`,
      );
    await mkdir(dirname(hostPath), { recursive: true });
    await extractToHost({ archive: Readable.from([result.stdout]), topName: posix.basename(source), hostPath });
  }

  async alive(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      const pod = await this.init.core.readNamespacedPod({ name: this.init.podName, namespace: this.init.namespace });
      return pod.status?.phase === 'Running' && pod.metadata?.deletionTimestamp === undefined;
    } catch {
      return false;
    }
  }

  /** Pods run elsewhere in the cluster: a host loopback URL is not reachable from them. */
  async reachHost(hostUrl: string): Promise<string> {
    const url = new URL(hostUrl);
    if (['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
      throw new SandboxError(
        `kubernetes sandbox ${this.id} cannot reach the host's loopback (${url.host}); expose the endpoint as a Service`,
      );
    }
    return hostUrl;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      try {
        await this.init.core.deleteNamespacedPod({
          name: this.init.podName,
          namespace: this.init.namespace,
          gracePeriodSeconds: 0,
        });
      } catch (error) {
        if ((error as { code?: number }).code !== 404)
          throw new SandboxError(`stop failed for kubernetes sandbox ${this.id}: ${(error as Error).message}`, { cause: error });
      } finally {
        this.init.slot.release();
      }
    })();
    return this.stopping;
  }
}

/**
 * A pod per sandbox on an existing cluster (`@kubernetes/client-node`): labelled
 * `troupe.sandbox=1` plus the runtime's run id, commands over the exec API (websocket channel
 * protocol), files as tar over exec, pods deleted on stop and swept by label with `sweep()`.
 * Network isolation needs a NetworkPolicy in the namespace (not created here).
 */
export class KubernetesRuntime extends RemoteRuntime<KubernetesRuntimeOptions, KubernetesSandbox> {
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: false };
  readonly runId = randomBytes(6).toString('hex');
  private readonly core: CoreV1Api;
  private readonly execApi: Exec;
  private readonly logger: RuntimeLogger | undefined;
  /** Where the cluster is and whose credentials these are, as errors name them (never the token). */
  private readonly where: { server: string; user: string; context: string };

  constructor(options: KubernetesRuntimeOptions & { kubeConfig: KubeConfig; logger?: RuntimeLogger }) {
    const { kubeConfig, logger, ...rest } = options;
    super({ id: 'kubernetes', schema: KubernetesRuntimeOptionsSchema, options: rest });
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.execApi = new Exec(kubeConfig);
    this.logger = logger;
    this.where = {
      server: kubeConfig.getCurrentCluster()?.server ?? 'the cluster',
      user: kubeConfig.getCurrentUser()?.name ?? '(none)',
      context: kubeConfig.getCurrentContext() || '(none)',
    };
  }

  /**
   * Preflight: list one pod of the namespace (`GET /api/v1/namespaces/{ns}/pods?limit=1`), a call
   * the runtime needs rights for anyway. The API server answers credentials it cannot
   * authenticate 401 `Unauthorized` (kubernetes `staging/src/k8s.io/apiserver/pkg/endpoints/filters/
   * authentication.go:51-55,74-84`) and a user without the right 403; client-node throws both as
   * `ApiException` with the status in `code`.
   */
  protected override async ping(): Promise<void> {
    await this.core.listNamespacedPod({ namespace: this.namespace, limit: 1 });
  }

  protected override credentialSource(): string {
    return `the credentials of kubeconfig user ${this.where.user} (context ${this.where.context})`;
  }

  protected override apiLocation(): string {
    return this.where.server;
  }

  private get namespace(): string {
    return this.options.namespace ?? 'default';
  }

  /** A pod that does not come to run is deleted before the error is passed on. */
  protected async provision(sandboxOptions: SandboxOptions): Promise<(slot: CreationSlot) => KubernetesSandbox> {
    if (sandboxOptions.network === false)
      this.logger?.warn('kubernetes runtime: network isolation needs a NetworkPolicy in the namespace');
    const image = sandboxOptions.image ?? this.options.image;
    if (!image) throw new SandboxError('kubernetes runtime needs an image (runtime option `image` or sandbox option `image`)');
    const podName = `troupe-${randomBytes(6).toString('hex')}`;
    const workdir = sandboxOptions.workdir ?? this.options.workdir ?? '/work';
    const limits: Record<string, string> = {};
    if (sandboxOptions.cpu !== undefined) limits.cpu = String(sandboxOptions.cpu);
    if (sandboxOptions.memoryMb !== undefined) limits.memory = `${Math.ceil(sandboxOptions.memoryMb)}Mi`;
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: this.namespace,
        labels: { ...this.options.labels, ...sandboxOptions.labels, 'troupe.sandbox': '1', 'troupe.run': this.runId },
      },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: CONTAINER,
            image,
            command: ['/bin/sh', '-c', `mkdir -p ${workdir}; ${KEEP_ALIVE}`],
            workingDir: workdir,
            ...(Object.keys(limits).length > 0 && { resources: { limits } }),
          },
        ],
      },
    };
    try {
      await this.core.createNamespacedPod({ namespace: this.namespace, body: pod });
      await this.waitRunning(podName);
    } catch (error) {
      await this.core
        .deleteNamespacedPod({ name: podName, namespace: this.namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined);
      if (SandboxError.isInstance(error)) throw error;
      throw new SandboxError(`kubernetes sandbox could not be created from image ${image}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return (slot) =>
      new KubernetesSandbox({
        core: this.core,
        exec: this.execApi,
        namespace: this.namespace,
        podName,
        workdir,
        env: { ...sandboxOptions.env },
        maxOutputBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        slot,
      });
  }

  private async waitRunning(podName: string): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutSeconds ?? 120) * 1000;
    for (let attempt = 0; ; attempt++) {
      const pod = await this.core.readNamespacedPod({ name: podName, namespace: this.namespace });
      const phase = pod.status?.phase;
      if (phase === 'Running') return;
      if (phase === 'Failed' || phase === 'Succeeded')
        throw new SandboxError(
          `pod ${podName} ended before it ran (${phase}: ${pod.status?.message ?? pod.status?.reason ?? ''})`,
        );
      const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
      if (
        waiting &&
        ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError'].includes(waiting.reason ?? '')
      ) {
        throw new SandboxError(`pod ${podName} cannot start: ${waiting.reason} ${waiting.message ?? ''}`.trim());
      }
      if (Date.now() > deadline)
        throw new SandboxError(`pod ${podName} did not run within ${this.options.startTimeoutSeconds ?? 120} s (phase ${phase})`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
    }
  }

  /** Deletes pods labelled `troupe.sandbox=1` (and `selector`, e.g. an old run id) in the namespace. */
  async sweep(selector: Record<string, string> = {}): Promise<string[]> {
    const labelSelector = Object.entries({ 'troupe.sandbox': '1', ...selector })
      .map(([name, value]) => `${name}=${value}`)
      .join(',');
    const pods = await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector });
    const names = pods.items.map((pod) => pod.metadata?.name).filter((name): name is string => Boolean(name));
    await Promise.all(
      names.map((name) =>
        this.core.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds: 0 }).catch(() => undefined),
      ),
    );
    return names;
  }
}
