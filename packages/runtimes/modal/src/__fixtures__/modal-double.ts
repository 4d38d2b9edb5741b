import { randomBytes } from 'node:crypto';
import { PassThrough, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { type CallContext, createServer, type Server, ServerError, Status } from 'nice-grpc';
import { loadModalDefinitions } from './modal-definitions.ts';

/**
 * A loopback stand-in for Modal's API, speaking gRPC with the installed SDK's own generated
 * protobuf codecs ({@link loadModalDefinitions}) for the calls `modal` 0.11 makes to create a
 * sandbox, exec in it and terminate it. Sandboxes are real containers on a Docker-API engine (the
 * private dockerd or podman of the test tooling), so commands really run, in isolation.
 *
 * Rules are cited beside the code: `sdk:<line>` is `node_modules/modal/dist/index.js` of modal
 * 0.11.1 (what the client sends and expects), `api.proto:<line>` / `tcr.proto:<line>` are
 * `modal_proto/api.proto` / `modal_proto/task_command_router.proto` of modal-labs/modal-client.
 * Modal's server is not open source: where only the client shows a rule, the double enforces what
 * the client relies on, and refuses anything else with the status the client maps.
 */

/** Statuses of `GenericResult` (api.proto:2588-2600). */
const GENERIC_STATUS = { success: 1, failure: 2, terminated: 3, timeout: 4 } as const;
/** `NetworkAccess.networkAccessType` BLOCKED (sdk:76894-76898). */
const NETWORK_BLOCKED = 2;
/** `TaskExecStdioFileDescriptor` STDOUT / STDERR (sdk:74508-74512). */
const FD_STDOUT = 0;
const FD_STDERR = 1;
/** `TaskExecStdoutConfig` / `TaskExecStderrConfig` DEVNULL (sdk:77556-77568). */
const STDIO_DEVNULL = 0;
/** Label the double puts on its containers. */
export const DOUBLE_LABEL = 'troupe.modal-double';

interface Output {
  chunks: Buffer[];
  size: number;
  closed: boolean;
  wake: Set<() => void>;
}

interface Exec {
  id: string;
  stdin: Duplex;
  stdinOffset: number;
  stdinClosed: boolean;
  stdout: Output;
  stderr: Output;
  exit: Promise<number>;
  exitCode: number | undefined;
}

interface SandboxRecord {
  id: string;
  taskId: string;
  appId: string;
  container: Docker.Container;
  result: { status: number; exitcode?: number; exception?: string } | undefined;
  execs: Map<string, Exec>;
  jwt: string;
  lifetime: NodeJS.Timeout;
}

/** One control-plane or router call as the double received it (for assertions). */
export interface RecordedCall {
  method: string;
  request: unknown;
  metadata: Record<string, string>;
}

const newOutput = (): Output => ({ chunks: [], size: 0, closed: false, wake: new Set() });
const push = (output: Output, chunk: Buffer) => {
  output.chunks.push(chunk);
  output.size += chunk.length;
  for (const wake of output.wake) wake();
};
const close = (output: Output) => {
  output.closed = true;
  for (const wake of output.wake) wake();
};
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** An (unsigned) JWT whose `exp` the SDK reads (sdk:74167-74187). */
const mintJwt = (claims: Record<string, unknown>) =>
  `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ ...claims, exp: Math.floor(Date.now() / 1000) + 3600 })}.sig`;

/** What {@link ModalDouble} needs: the engine its sandboxes run on, and the token it accepts. */
export interface ModalDoubleOptions {
  docker: Docker;
  tokenId: string;
  tokenSecret: string;
}

/** The loopback Modal API (control plane and task command router on one port). */
export class ModalDouble {
  readonly calls: RecordedCall[] = [];
  readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly apps = new Map<string, string>();
  private readonly images = new Map<string, string>();
  private readonly authTokens = new Set<string>();
  private server: Server | undefined;
  /** `http://127.0.0.1:<port>`: what `MODAL_SERVER_URL` points the SDK at. */
  url = '';
  private port = 0;

  constructor(private readonly options: ModalDoubleOptions) {}

  async start(): Promise<void> {
    const { ModalClientDefinition, TaskCommandRouterDefinition } = loadModalDefinitions();
    this.server = createServer();
    this.server.add(ModalClientDefinition, this.service('control', this.controlPlane()) as never);
    this.server.add(TaskCommandRouterDefinition, this.service('router', this.router()) as never);
    this.port = await this.server.listen('127.0.0.1:0');
    this.url = `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.sandboxes.values()].map((sandbox) => this.finish(sandbox, GENERIC_STATUS.terminated)));
    await this.server?.shutdown();
  }

  /** Every method of a service: the implemented ones after recording and auth, the rest UNIMPLEMENTED (as grpc servers answer). */
  private service(kind: 'control' | 'router', implementation: Record<string, (...args: never[]) => unknown>) {
    return new Proxy(implementation, {
      get: (target, method: string) => {
        const own = target[method];
        if (!own) {
          return () => {
            throw new ServerError(Status.UNIMPLEMENTED, `the Modal double does not implement ${method}`);
          };
        }
        return (request: unknown, context: CallContext) => {
          const metadata = Object.fromEntries([...context.metadata].map(([key, value]) => [key, String(value)]));
          this.calls.push({ method, request, metadata });
          if (kind === 'control') this.authenticate(method, metadata);
          return (own as (request: unknown, context: CallContext) => unknown)(request, context);
        };
      },
    });
  }

  /**
   * The control plane's credentials: every call carries `x-modal-token-id` / `-secret`
   * (sdk:79487-79489), and every call but AuthTokenGet the `x-modal-auth-token` it returned
   * (sdk:79491-79496). A wrong or missing one is UNAUTHENTICATED.
   */
  private authenticate(method: string, metadata: Record<string, string>): void {
    if (metadata['x-modal-token-id'] !== this.options.tokenId || metadata['x-modal-token-secret'] !== this.options.tokenSecret)
      throw new ServerError(Status.UNAUTHENTICATED, 'Token ID or secret is invalid');
    if (method !== 'authTokenGet' && !this.authTokens.has(metadata['x-modal-auth-token'] ?? ''))
      throw new ServerError(Status.UNAUTHENTICATED, 'missing or invalid auth token');
  }

  private sandbox(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Sandbox ${id} not found`);
    return sandbox;
  }

  private task(taskId: string, context: CallContext): SandboxRecord {
    const sandbox = [...this.sandboxes.values()].find((each) => each.taskId === taskId);
    // The router authorizes with the task's JWT as a bearer token (sdk:74373-74377).
    if (!sandbox || context.metadata.get('authorization') !== `Bearer ${sandbox.jwt}`)
      throw new ServerError(Status.UNAUTHENTICATED, 'invalid or missing command router token');
    if (sandbox.result) throw new ServerError(Status.NOT_FOUND, `task ${taskId} has finished`);
    return sandbox;
  }

  private controlPlane() {
    return {
      authTokenGet: () => {
        const token = mintJwt({ sub: this.options.tokenId });
        this.authTokens.add(token);
        return { token };
      },
      // The SDK reads only the builder version (sdk:68091-68100).
      environmentGetOrCreate: (request: { deploymentName: string }) => ({
        environmentId: 'en-double',
        metadata: { name: request.deploymentName || 'main', settings: { imageBuilderVersion: '2025.06' } },
      }),
      // A missing app is created only with OBJECT_CREATION_TYPE_CREATE_IF_MISSING = 1 (sdk:67787-67791).
      appGetOrCreate: (request: { appName: string; objectCreationType: number }) => {
        let appId = this.apps.get(request.appName);
        if (!appId) {
          if (request.objectCreationType !== 1) throw new ServerError(Status.NOT_FOUND, `App '${request.appName}' not found`);
          appId = `ap-${randomBytes(8).toString('hex')}`;
          this.apps.set(request.appName, appId);
        }
        return { appId };
      },
      imageGetOrCreate: (request: { appId: string; image?: { dockerfileCommands: string[] } }) => this.imageGetOrCreate(request),
      sandboxCreate: async (request: SandboxCreateRequest) => ({ sandboxId: (await this.sandboxCreate(request)).id }),
      // V2 is the SDK's default (profile sandboxV2 defaults to true, sdk:74157; sdk:77141-77143): the
      // response carries the task and its router access, so no GetTaskId round trip (sdk:77226-77249;
      // api.proto:3519-3525).
      sandboxCreateV2: async (request: SandboxCreateRequest) => {
        const sandbox = await this.sandboxCreate(request);
        return { sandboxId: sandbox.id, taskId: sandbox.taskId, commandRouterAccess: this.routerAccess(sandbox) };
      },
      sandboxGetCommandRouterAccess: (request: { sandboxId?: string }) =>
        this.routerAccess(this.sandbox(request.sandboxId ?? '')),
      // task_id is unset once the sandbox ended, with its result instead (api.proto:3611-3614).
      sandboxGetTaskId: (request: { sandboxId: string }) => {
        const sandbox = this.sandbox(request.sandboxId);
        return sandbox.result ? { taskResult: sandbox.result } : { taskId: sandbox.taskId };
      },
      taskGetCommandRouterAccess: (request: { taskId: string }) => {
        const sandbox = [...this.sandboxes.values()].find((each) => each.taskId === request.taskId);
        if (!sandbox) throw new ServerError(Status.NOT_FOUND, `task ${request.taskId} not found`);
        return this.routerAccess(sandbox);
      },
      sandboxWait: (request: { sandboxId: string }) => this.sandboxWait(request),
      sandboxWaitV2: (request: { sandboxId: string }) => this.sandboxWait(request),
      sandboxTerminate: (request: { sandboxId: string }) => this.sandboxTerminate(request),
      sandboxTerminateV2: (request: { sandboxId: string }) => this.sandboxTerminate(request),
    };
  }

  /** The router URL must be https (sdk:74316-74319); on a localhost server the SDK dials it without TLS (sdk:74330-74346). */
  private routerAccess(sandbox: SandboxRecord) {
    if (sandbox.result) throw new ServerError(Status.FAILED_PRECONDITION, `Sandbox ${sandbox.id} has finished`);
    return { jwt: sandbox.jwt, url: `https://127.0.0.1:${this.port}` };
  }

  /** No result while running: poll() reads null (sdk:77529-77532, sdk:78560-78563). */
  private sandboxWait(request: { sandboxId: string }) {
    const sandbox = this.sandbox(request.sandboxId);
    return sandbox.result ? { result: sandbox.result } : {};
  }

  private async sandboxTerminate(request: { sandboxId: string }) {
    const sandbox = this.sandbox(request.sandboxId);
    const existing = sandbox.result;
    await this.finish(sandbox, GENERIC_STATUS.terminated);
    return existing ? { existingResult: existing } : {};
  }

  /**
   * The image of a registry tag: a single layer `FROM <tag>` (sdk:69104-69113). The double builds
   * no further layers and pulls from no registry: the tag must exist on its engine; otherwise the
   * build result is a failure, which the SDK raises (sdk:69150-69155).
   */
  private async imageGetOrCreate(request: { appId: string; image?: { dockerfileCommands: string[] } }) {
    if (![...this.apps.values()].includes(request.appId)) throw new ServerError(Status.NOT_FOUND, `App ${request.appId} not found`);
    const commands = request.image?.dockerfileCommands ?? [];
    const imageId = `im-${randomBytes(8).toString('hex')}`;
    const from = commands.length === 1 ? /^FROM (\S+)$/.exec(commands[0] ?? '') : null;
    if (!from?.[1]) {
      return { imageId, result: { status: GENERIC_STATUS.failure, exception: `the Modal double builds no layers: ${commands.join(' / ')}` } };
    }
    const tag = from[1];
    const present = await this.options.docker
      .getImage(tag)
      .inspect()
      .then(() => true)
      .catch(() => false);
    if (!present) return { imageId, result: { status: GENERIC_STATUS.failure, exception: `image ${tag} not found (the double pulls nothing)` } };
    this.images.set(imageId, tag);
    return { imageId, result: { status: GENERIC_STATUS.success } };
  }

  /**
   * A sandbox: a container of the image kept alive (an empty entrypoint means the default
   * keep-alive, sdk:77087), CPU from `milliCpu`, memory from `memoryMb`, no network when BLOCKED,
   * the tags as labels, terminated when `timeoutSecs` (default 300, sdk:77089) runs out.
   */
  private async sandboxCreate(request: SandboxCreateRequest): Promise<SandboxRecord> {
    const definition = request.definition;
    if (!definition) throw new ServerError(Status.INVALID_ARGUMENT, 'definition is required');
    if (![...this.apps.values()].includes(request.appId)) throw new ServerError(Status.NOT_FOUND, `App ${request.appId} not found`);
    const tag = this.images.get(definition.imageId);
    if (!tag) throw new ServerError(Status.NOT_FOUND, `Image ${definition.imageId} not found`);
    if (definition.entrypointArgs.length > 0)
      throw new ServerError(Status.UNIMPLEMENTED, 'the Modal double runs only the default entrypoint');
    const id = `sb-${randomBytes(8).toString('hex')}`;
    const resources = definition.resources;
    const container = await this.options.docker.createContainer({
      Image: tag,
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: ['trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
      ...(definition.workdir && { WorkingDir: definition.workdir }),
      Labels: {
        ...Object.fromEntries(request.tags.map((tag) => [tag.tagName, tag.tagValue])),
        [DOUBLE_LABEL]: id,
      },
      HostConfig: {
        Init: true,
        NetworkMode: definition.networkAccess?.networkAccessType === NETWORK_BLOCKED ? 'none' : 'host',
        ...(resources?.milliCpu && { NanoCpus: resources.milliCpu * 1_000_000 }),
        ...(resources?.memoryMb && { Memory: resources.memoryMb * 1024 * 1024 }),
      },
    });
    await container.start();
    const sandbox: SandboxRecord = {
      id,
      taskId: `ta-${randomBytes(8).toString('hex')}`,
      appId: request.appId,
      container,
      result: undefined,
      execs: new Map(),
      jwt: mintJwt({ task: id }),
      lifetime: setTimeout(() => void this.finish(sandbox, GENERIC_STATUS.timeout), (definition.timeoutSecs || 300) * 1000),
    };
    sandbox.lifetime.unref();
    this.sandboxes.set(id, sandbox);
    return sandbox;
  }

  private async finish(sandbox: SandboxRecord, status: number): Promise<void> {
    if (sandbox.result) return;
    sandbox.result = { status };
    clearTimeout(sandbox.lifetime);
    await sandbox.container.remove({ force: true }).catch(() => undefined);
    for (const exec of sandbox.execs.values()) {
      close(exec.stdout);
      close(exec.stderr);
    }
  }

  private router() {
    return {
      taskExecStart: (request: TaskExecStartRequest, context: CallContext) => this.execStart(request, context),
      taskExecStdioRead: (request: { taskId: string; execId: string; offset: number; fileDescriptor: number }, context: CallContext) =>
        this.stdioRead(request, context),
      taskExecStdinWrite: (
        request: { taskId: string; execId: string; offset: number; data: Uint8Array; eof: boolean },
        context: CallContext,
      ) => this.stdinWrite(request, context),
      taskExecWait: async (request: { taskId: string; execId: string }, context: CallContext) => {
        const exec = this.exec(request, context);
        return { code: await exec.exit };
      },
      // exit_status stays unset while the command runs (tcr.proto:147-157).
      taskExecPoll: (request: { taskId: string; execId: string }, context: CallContext) => {
        const exec = this.exec(request, context);
        return exec.exitCode === undefined ? {} : { code: exec.exitCode };
      },
    };
  }

  private exec(request: { taskId: string; execId: string }, context: CallContext): Exec {
    const exec = this.task(request.taskId, context).execs.get(request.execId);
    if (!exec) throw new ServerError(Status.NOT_FOUND, `exec ${request.execId} not found`);
    return exec;
  }

  /**
   * One exec: argv as given, the inline env of its secret sources (sdk:68784-68787), its workdir,
   * stdout / stderr kept for TaskExecStdioRead (or dropped for DEVNULL), stdin open until EOF. A
   * repeated exec_id is the same exec (exec ids make starts idempotent, tcr.proto:163-164).
   * `timeout_secs` kills the command when it runs out (tcr.proto:170-173).
   */
  private async execStart(request: TaskExecStartRequest, context: CallContext) {
    const sandbox = this.task(request.taskId, context);
    if (sandbox.execs.has(request.execId)) return {};
    if (request.commandArgs.length === 0) throw new ServerError(Status.INVALID_ARGUMENT, 'command_args must not be empty');
    const env: Record<string, string> = {};
    for (const source of request.secretSources ?? []) Object.assign(env, source.env?.contents ?? {});
    Object.assign(env, request.env ?? {});
    const dockerExec = await sandbox.container.exec({
      Cmd: request.commandArgs,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      ...(request.workdir && { WorkingDir: request.workdir }),
      Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
    });
    const stream = await dockerExec.start({ hijack: true, stdin: true });
    const exec: Exec = {
      id: request.execId,
      stdin: stream,
      stdinOffset: 0,
      stdinClosed: false,
      stdout: newOutput(),
      stderr: newOutput(),
      exit: Promise.resolve(0),
      exitCode: undefined,
    };
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.on('data', (chunk: Buffer) => request.stdoutConfig !== STDIO_DEVNULL && push(exec.stdout, chunk));
    stderr.on('data', (chunk: Buffer) => request.stderrConfig !== STDIO_DEVNULL && push(exec.stderr, chunk));
    this.options.docker.modem.demuxStream(stream, stdout, stderr);
    const drained = (pass: PassThrough) => new Promise<void>((resolve) => pass.once('end', resolve));
    const passesEnded = Promise.all([drained(stdout), drained(stderr)]);
    const ended = new Promise<void>((resolve) => {
      stream.once('end', resolve);
      stream.once('close', resolve);
      stream.once('error', () => resolve());
    });
    exec.exit = ended.then(async () => {
      // Everything demultiplexed before the end is delivered before the descriptors close.
      stdout.end();
      stderr.end();
      await passesEnded;
      close(exec.stdout);
      close(exec.stderr);
      let info = await dockerExec.inspect().catch(() => undefined);
      for (let attempt = 0; info?.Running && attempt < 200; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        info = await dockerExec.inspect().catch(() => undefined);
      }
      exec.exitCode = info?.ExitCode ?? 137;
      return exec.exitCode;
    });
    if (request.timeoutSecs) {
      const timer = setTimeout(async () => {
        const info = await dockerExec.inspect().catch(() => undefined);
        if (info?.Pid) process.kill(info.Pid, 'SIGKILL');
      }, request.timeoutSecs * 1000);
      timer.unref();
      void exec.exit.then(() => clearTimeout(timer));
    }
    sandbox.execs.set(request.execId, exec);
    return {};
  }

  /** Output from `offset` on, as it comes, until the descriptor closes (tcr.proto:251-266). */
  private async *stdioRead(
    request: { taskId: string; execId: string; offset: number; fileDescriptor: number },
    context: CallContext,
  ): AsyncGenerator<{ data: Uint8Array }> {
    const exec = this.exec(request, context);
    if (request.fileDescriptor !== FD_STDOUT && request.fileDescriptor !== FD_STDERR)
      throw new ServerError(Status.INVALID_ARGUMENT, `unknown file descriptor ${request.fileDescriptor}`);
    const output = request.fileDescriptor === FD_STDOUT ? exec.stdout : exec.stderr;
    let offset = Number(request.offset);
    for (;;) {
      if (offset < output.size) {
        const all = Buffer.concat(output.chunks);
        output.chunks = [all];
        yield { data: all.subarray(offset) };
        offset = all.length;
        continue;
      }
      if (output.closed) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          output.wake.delete(wake);
          context.signal.removeEventListener('abort', wake);
          resolve();
        };
        output.wake.add(wake);
        context.signal.addEventListener('abort', wake);
      });
      if (context.signal.aborted) return;
    }
  }

  /**
   * Stdin bytes at `offset` (a resent prefix is skipped, a gap refused), then EOF when `eof`
   * (tcr.proto:209-221). Writing after EOF is refused.
   */
  private stdinWrite(request: { taskId: string; execId: string; offset: number; data: Uint8Array; eof: boolean }, context: CallContext) {
    const exec = this.exec(request, context);
    const offset = Number(request.offset);
    if (exec.stdinClosed) {
      if (request.data.length === 0 && request.eof) return {};
      throw new ServerError(Status.FAILED_PRECONDITION, `stdin of exec ${exec.id} is closed`);
    }
    if (offset > exec.stdinOffset)
      throw new ServerError(Status.OUT_OF_RANGE, `stdin offset ${offset} is past the ${exec.stdinOffset} bytes written`);
    const fresh = Buffer.from(request.data).subarray(exec.stdinOffset - offset);
    if (fresh.length > 0) exec.stdin.write(fresh);
    exec.stdinOffset += fresh.length;
    if (request.eof) {
      exec.stdinClosed = true;
      exec.stdin.end();
    }
    return {};
  }
}

/** The fields of `SandboxCreateRequest` the double reads (built at sdk:77083-77117). */
interface SandboxCreateRequest {
  appId: string;
  tags: { tagName: string; tagValue: string }[];
  definition?: {
    imageId: string;
    entrypointArgs: string[];
    timeoutSecs: number;
    workdir?: string;
    networkAccess?: { networkAccessType: number };
    resources?: { milliCpu?: number; memoryMb?: number };
  };
}

/** The fields of `TaskExecStartRequest` the double reads (built at sdk:77574-77586). */
interface TaskExecStartRequest {
  taskId: string;
  execId: string;
  commandArgs: string[];
  stdoutConfig: number;
  stderrConfig: number;
  timeoutSecs?: number;
  workdir?: string;
  secretSources?: { env?: { contents: Record<string, string> } }[];
  env?: Record<string, string>;
}
