import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '@troupe/verifiers';

/**
 * Runs inside the container's network namespace (but the host's filesystem): listens on the
 * container's 127.0.0.1:<port> and pipes each connection to a unix socket on the host. Exits when
 * its stdin closes (its parent, the runtime, went away).
 */
const FORWARDER_SOURCE = `
const net = require('node:net');
const [port, socketPath, listenHost] = process.argv.slice(1);
const server = net.createServer((inbound) => {
  const outbound = net.connect(socketPath);
  inbound.pipe(outbound).pipe(inbound);
  inbound.on('error', () => outbound.destroy());
  outbound.on('error', () => inbound.destroy());
});
server.on('error', (error) => { process.stderr.write(String(error) + '\\n'); process.exit(1); });
server.listen(Number(port), listenHost, () => process.stdout.write('ready\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/**
 * Makes a host loopback port reachable from a container that has no network (`NetworkMode:
 * none`): a unix socket on the host proxies to `127.0.0.1:<port>`, and a forwarder entered into
 * the container's network namespace with `nsenter` listens on the container's own
 * `127.0.0.1:<port>`. The program in the container uses the same URL as the host; nothing else
 * becomes reachable. Needs root and the Docker engine on the same host as troupe (the container's
 * pid is a host pid).
 */
export class HostForwarder {
  private readonly forwards = new Map<string, Promise<{ server: Server; child: ChildProcess }>>();
  private directory: string | undefined;

  constructor(private readonly options: { containerPid: number; nodePath: string; nsenterPath?: string }) {}

  /**
   * Forwards the container's `<listenHost>:<port>` (default `127.0.0.1`, any 127/8 address works)
   * to the host's `<hostName>:<port>`; idempotent per listen address and port.
   */
  forward(target: { hostName: string; port: number; listenHost?: string }): Promise<void> {
    const key = `${target.listenHost ?? '127.0.0.1'}:${target.port}`;
    let pending = this.forwards.get(key);
    if (!pending) {
      pending = this.start(target);
      this.forwards.set(key, pending);
      pending.catch(() => this.forwards.delete(key));
    }
    return pending.then(() => undefined);
  }

  private async start(target: {
    hostName: string;
    port: number;
    listenHost?: string;
  }): Promise<{ server: Server; child: ChildProcess }> {
    this.directory ??= await mkdtemp(join(tmpdir(), 'troupe-forward-'));
    const listenHost = target.listenHost ?? '127.0.0.1';
    const socketPath = join(this.directory, `${listenHost}-${target.port}.sock`);
    const server = createServer((inbound) => {
      const outbound = createConnection({ host: target.hostName, port: target.port });
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    const child = spawn(
      this.options.nsenterPath ?? 'nsenter',
      [
        `--net=/proc/${this.options.containerPid}/ns/net`,
        '--',
        this.options.nodePath,
        '-e',
        FORWARDER_SOURCE,
        String(target.port),
        socketPath,
        listenHost,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        let errorText = '';
        child.stderr?.on('data', (chunk: Buffer) => {
          errorText += chunk.toString();
        });
        child.stdout?.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('ready')) resolve();
        });
        child.once('error', reject);
        child.once('exit', (code) => reject(new Error(`forwarder exited with ${code}: ${errorText.trim()}`)));
      });
    } catch (error) {
      child.kill('SIGKILL');
      server.close();
      throw new SandboxError(
        `cannot forward port ${target.port} into the container (needs root, nsenter and a local engine): ${(error as Error).message}`,
        { cause: error },
      );
    }
    child.removeAllListeners('exit');
    return { server, child };
  }

  /** Stops every forwarder and removes the sockets. */
  async close(): Promise<void> {
    const forwards = await Promise.allSettled([...this.forwards.values()]);
    this.forwards.clear();
    for (const forward of forwards) {
      if (forward.status !== 'fulfilled') continue;
      forward.value.child.kill('SIGKILL');
      forward.value.server.close();
    }
    if (this.directory) await rm(this.directory, { recursive: true, force: true });
  }
}
