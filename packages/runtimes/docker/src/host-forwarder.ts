import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '@troupe/verifiers';
import { registerRelayedCaller } from '@troupe/verifiers/internal';

/**
 * Runs inside the container's network namespace (but the host's filesystem and PIDs): listens on
 * the container's 127.0.0.1:<port> and pipes each connection to a unix socket on the host, first
 * writing one line `troupe-caller <pid>\n`: the host pid of the container process that made the
 * connection (the one whose file table holds its client end, found in the container's
 * /proc/net/tcp and then in /proc/<pid>/fd of the processes sharing this network namespace), or
 * `-` when none was found. Exits when its stdin closes (its parent, the runtime, went away).
 */
const FORWARDER_SOURCE = `
const net = require('node:net');
const fs = require('node:fs');
const [port, socketPath, listenHost] = process.argv.slice(1);
const ownNet = fs.readlinkSync('/proc/self/ns/net');
const hex = (p) => p.toString(16).toUpperCase().padStart(4, '0');
function callerOf(socket) {
  try {
    const client = ':' + hex(socket.remotePort), server = ':' + hex(socket.localPort);
    let inode = null;
    for (const line of fs.readFileSync('/proc/self/net/tcp', 'latin1').split('\\n')) {
      const f = line.trim().split(/\\s+/);
      if (f[1] && f[1].endsWith(client) && f[2] && f[2].endsWith(server)) { inode = f[9]; break; }
    }
    if (!inode || inode === '0') return '-';
    const wanted = 'socket:[' + inode + ']';
    for (const pid of fs.readdirSync('/proc')) {
      if (!/^[0-9]+$/.test(pid) || Number(pid) === process.pid) continue;
      try {
        if (fs.readlinkSync('/proc/' + pid + '/ns/net') !== ownNet) continue;
        for (const fd of fs.readdirSync('/proc/' + pid + '/fd')) {
          try { if (fs.readlinkSync('/proc/' + pid + '/fd/' + fd) === wanted) return pid; } catch {}
        }
      } catch {}
    }
  } catch {}
  return '-';
}
const server = net.createServer((inbound) => {
  const outbound = net.connect(socketPath);
  outbound.write('troupe-caller ' + callerOf(inbound) + '\\n');
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
    const server = createServer((inbound) => relayWithCaller(inbound, target));
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
        child.once('exit', (code) => reject(new SandboxError(`forwarder exited with ${code}: ${errorText.trim()}`)));
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

/** The longest first line a forwarder writes (`troupe-caller <pid>\n`). */
const MAX_CALLER_LINE = 64;

/**
 * Relays one forwarded connection to `<hostName>:<port>`: reads the forwarder's first line (the
 * container process behind the connection), connects, and registers the connection as relaying for
 * that process (`relay:<pid>`, see `registerRelayedCaller`) before any of the program's bytes go out,
 * so the interception server can bind a rollout's secret to the program's own process.
 */
function relayWithCaller(inbound: Socket, target: { hostName: string; port: number }): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf(0x0a);
    if (end === -1) {
      if (head.length > MAX_CALLER_LINE) inbound.destroy();
      return;
    }
    inbound.off('data', onData);
    inbound.pause();
    const pid = /^troupe-caller (\d+)$/.exec(head.subarray(0, end).toString('latin1'))?.[1];
    const rest = head.subarray(end + 1);
    const outbound = createConnection({ host: target.hostName, port: target.port });
    let forget = () => {};
    outbound.once('connect', () => {
      forget = registerRelayedCaller(outbound.localPort as number, pid ? `relay:${pid}` : null);
      if (rest.length) outbound.write(rest);
      inbound.pipe(outbound).pipe(inbound);
    });
    outbound.once('close', () => forget());
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  };
  inbound.on('data', onData);
  inbound.on('error', () => inbound.destroy());
}
