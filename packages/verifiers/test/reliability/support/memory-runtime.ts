import { randomBytes } from 'node:crypto';
import { SandboxError } from '../../../src/errors/troupe-error.ts';
import type { ExecResult, Runtime, RuntimeCapabilities, Sandbox } from '../../../src/runtime/runtime.ts';

/**
 * A sandbox with nothing in it: files live in a map and commands are refused. For programs that
 * only talk to the model (load benchmarks, interception tests), so the sandbox costs nothing.
 */
export class MemorySandbox implements Sandbox {
  readonly id = `memory-${randomBytes(4).toString('hex')}`;
  readonly runtime = 'memory';
  readonly workdir = '/work';
  private readonly files = new Map<string, Uint8Array>();
  private stopped = false;

  async exec(): Promise<ExecResult> {
    throw new SandboxError('the memory runtime runs no commands');
  }
  async readFile(path: string): Promise<Uint8Array> {
    const data = this.files.get(path);
    if (!data) throw new SandboxError(`no file ${path} in sandbox ${this.id}`);
    return data;
  }
  async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    this.files.set(path, typeof data === 'string' ? new TextEncoder().encode(data) : data);
  }
  async upload(): Promise<void> {
    throw new SandboxError('the memory runtime has no host files');
  }
  async download(): Promise<void> {
    throw new SandboxError('the memory runtime has no host files');
  }
  async alive(): Promise<boolean> {
    return !this.stopped;
  }
  async reachHost(hostUrl: string): Promise<string> {
    return hostUrl;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
}

/** The `memory` runtime: sandboxes that cost nothing (see `MemorySandbox`). */
export class MemoryRuntime implements Runtime {
  readonly id = 'memory';
  readonly capabilities: RuntimeCapabilities = { container: false, networkIsolation: false };
  async createSandbox(): Promise<Sandbox> {
    return new MemorySandbox();
  }
}
