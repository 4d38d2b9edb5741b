import { posix } from 'node:path';
import { SandboxError } from '../errors/index.ts';
import type { CreationSlot } from './creation-limiter.ts';
import type { ExecOptions, ExecResult, Sandbox } from './runtime.ts';
import { downloadTree, shellJoin, uploadTree } from './sandbox-file-tree.ts';

/**
 * The `SandboxError` of a failed operation in a remote sandbox (`exec failed in e2b sandbox sb-1: …`);
 * a `SandboxError` passes through unchanged.
 */
export function remoteSandboxError(options: { runtime: string; operation: string; id: string; error: unknown }): SandboxError {
  const { error } = options;
  if (SandboxError.isInstance(error)) return error;
  return new SandboxError(
    `${options.operation} failed in ${options.runtime} sandbox ${options.id}: ${(error as Error).message ?? String(error)}`,
    { cause: error },
  );
}

/**
 * Base of sandboxes on a remote provider (Daytona, E2B, Prime): relative paths resolve against the
 * workdir, trees move through `readFile` / `writeFile`, a host loopback URL is refused (the sandbox
 * cannot reach it), and `stop` deletes the sandbox once (later calls share the first; a failure is a
 * `SandboxError` naming the runtime) and always frees its creation slot. Subclasses talk to the provider.
 */
export abstract class RemoteSandbox implements Sandbox {
  abstract readonly runtime: string;
  abstract readonly id: string;
  abstract readonly workdir: string;
  /** True once `stop` was called. */
  protected stopped = false;
  private stopping: Promise<void> | undefined;

  constructor(private readonly slot: CreationSlot) {}

  abstract exec(command: string | string[], options?: ExecOptions): Promise<ExecResult>;
  abstract readFile(path: string): Promise<Uint8Array>;
  abstract writeFile(path: string, data: string | Uint8Array, options?: { mode?: number }): Promise<void>;
  abstract alive(): Promise<boolean>;

  /** Deletes the sandbox at the provider (called once, by `stop`). */
  protected abstract destroy(): Promise<void>;

  /** The `SandboxError` of a failed provider call (`readFile x failed in e2b sandbox sb-1: …`). */
  protected failure(operation: string, error: unknown): SandboxError {
    return remoteSandboxError({ runtime: this.runtime, operation, id: this.id, error });
  }

  /** Throws when the sandbox is stopped. */
  protected assertRunning(operation: string): void {
    if (this.stopped) throw new SandboxError(`sandbox ${this.id} is stopped (${operation})`);
  }

  /**
   * What every `exec` starts with: throws when the sandbox is stopped or `options.signal` is already
   * aborted, and returns the command as one shell line (an argv is joined with shell quoting).
   */
  protected execLine(command: string | string[], options: ExecOptions): string {
    this.assertRunning('exec');
    if (options.signal?.aborted) throw options.signal.reason;
    return typeof command === 'string' ? command : shellJoin(command);
  }

  /** A sandbox path made absolute against the workdir. */
  protected resolve(path: string): string {
    if (!path) throw new SandboxError('empty sandbox path');
    return posix.resolve(this.workdir, path);
  }

  upload(hostPath: string, sandboxPath: string): Promise<void> {
    return uploadTree({ sandbox: this, hostPath, sandboxPath: this.resolve(sandboxPath) });
  }

  download(sandboxPath: string, hostPath: string): Promise<void> {
    return downloadTree({ sandbox: this, sandboxPath: this.resolve(sandboxPath), hostPath });
  }

  /** Remote sandboxes cannot reach the host's loopback: such a URL is refused, any other is returned as is. */
  async reachHost(hostUrl: string): Promise<string> {
    const url = new URL(hostUrl);
    if (['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
      throw new SandboxError(
        `${this.runtime} sandbox ${this.id} cannot reach the host's loopback (${url.host}); expose the endpoint publicly or tunnel it`,
      );
    }
    return hostUrl;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      try {
        await this.destroy();
      } catch (error) {
        throw this.failure('stop', error);
      } finally {
        this.slot.release();
      }
    })();
    return this.stopping;
  }
}

/**
 * The sandboxes a runtime has created and not yet stopped. `add` builds a sandbox around a
 * creation slot whose release also forgets the sandbox; `stopAll` stops those still open (the
 * runtime's `close`), waiting for every stop whether or not it fails.
 */
export class OpenSandboxes<S extends Sandbox> {
  private readonly open = new Set<S>();

  /** Builds the sandbox with a slot that, when released, forgets it and releases `slot`; keeps it open. */
  add(slot: CreationSlot, build: (slot: CreationSlot) => S): S {
    const sandbox = build({
      release: () => {
        this.open.delete(sandbox);
        slot.release();
      },
    });
    this.open.add(sandbox);
    return sandbox;
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.open].map((sandbox) => sandbox.stop()));
  }
}
