import { z } from 'zod';

/** Result of one command in a sandbox. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** True when the command was killed for running past `timeoutMs`. */
  timedOut: boolean;
  durationMs: number;
  /** True when stdout or stderr exceeded the runtime's output cap and was cut. */
  truncated?: boolean;
}

/**
 * Per-command options of `sandbox.exec(command, options)`: working directory, extra environment,
 * timeout in milliseconds, stdin, abort signal.
 */
export interface ExecOptions {
  /** Working directory inside the sandbox (default: the sandbox workdir). */
  cwd?: string;
  /** Extra environment variables for this command. */
  env?: Record<string, string>;
  /** Kill the command (and its process group) after this many milliseconds. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin (then closed). Stdin is always closed otherwise. */
  stdin?: string | Uint8Array;
  signal?: AbortSignal;
  /** Called with output chunks as they arrive (long-running programs). */
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
}

/** Options for creating a sandbox. Fields a runtime does not support are ignored with a log line. */
export const SandboxOptionsSchema = z.object({
  /** The container image (container runtimes; `local` ignores it). */
  image: z.string().optional(),
  /** The working directory inside the sandbox, where relative paths resolve. */
  workdir: z.string().optional(),
  /** Environment of every command. */
  env: z.record(z.string(), z.string()).optional(),
  /** Allow outbound network (off by default where the runtime can enforce it). */
  network: z.boolean().optional(),
  /** CPU limit in cores (fractions allowed). */
  cpu: z.number().positive().optional(),
  /** Memory limit in MiB. */
  memoryMb: z.number().positive().optional(),
  /** Labels / tags put on the sandbox (container labels, cloud metadata) to find it again. */
  labels: z.record(z.string(), z.string()).optional(),
});
/** Options of `runtime.create(options)` as parsed (memory in MiB, `cpu` in cores); see {@link SandboxOptionsSchema}. */
export type SandboxOptions = z.infer<typeof SandboxOptionsSchema>;

/**
 * One isolated place to run programs: a directory with its own processes (`local`), a
 * container (`docker`), a cloud sandbox. Paths may be absolute (inside the sandbox) or
 * relative to `workdir`; a path that escapes the sandbox is refused with a `SandboxError`.
 */
export interface Sandbox {
  readonly id: string;
  /** The runtime id that made it (`local`, `docker`, …). */
  readonly runtime: string;
  /** Absolute working directory inside the sandbox. */
  readonly workdir: string;
  /** Runs `command` (a shell string run by `sh -c`, or an argv list). */
  exec(command: string | string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * Reads a regular file (a FIFO, device or directory is refused without blocking). With
   * `maxBytes`, a larger file is refused from its size, before any byte is read.
   */
  readFile(path: string, options?: { maxBytes?: number }): Promise<Uint8Array>;
  writeFile(path: string, data: string | Uint8Array, options?: { mode?: number }): Promise<void>;
  /** Copies a host file or directory into the sandbox. */
  upload(hostPath: string, sandboxPath: string): Promise<void>;
  /**
   * Copies a sandbox file or directory out to the host. With `maxBytes`, a download whose
   * regular files add up to more is refused from their sizes, before their bytes are copied.
   */
  download(sandboxPath: string, hostPath: string, options?: { maxBytes?: number }): Promise<void>;
  /**
   * Kills every process started in the sandbox, and everything those started (background jobs,
   * `setsid`, double forks, daemons), keeping its files; the sandbox stays usable. Runtimes that
   * cannot guarantee it leave it out (the shared agentic judge then refuses them).
   */
  killAll?(): Promise<void>;
  /** True while the sandbox can still run commands. */
  alive(): Promise<boolean>;
  /**
   * The URL under which a program in the sandbox reaches `hostUrl` (a loopback URL on the
   * host, such as the interception server). Identity for process runtimes.
   */
  reachHost(hostUrl: string): Promise<string>;
  /** Stops the sandbox and removes everything it created. Safe to call twice. */
  stop(): Promise<void>;
}

/** What a runtime can guarantee, checked when agents are paired with harnesses and tasks. */
export interface RuntimeCapabilities {
  /** Sandboxes are containers or VMs (programs cannot see the host filesystem). */
  container: boolean;
  /** Network can be switched off per sandbox. */
  networkIsolation: boolean;
}

/** A factory of sandboxes. One runtime serves many rollouts. */
export interface Runtime {
  readonly id: string;
  readonly capabilities: RuntimeCapabilities;
  createSandbox(options?: SandboxOptions): Promise<Sandbox>;
  /**
   * Checks that the runtime's engine answers (a Docker socket, a cloud API) before a run creates
   * anything: throws a `SandboxError` naming the engine and how to reach it. `troupe eval` and
   * `troupe train` call it once per runtime before the run directory exists.
   */
  preflight?(): Promise<void>;
  /** Releases shared resources (clients, leftovers). */
  close?(): Promise<void>;
}
