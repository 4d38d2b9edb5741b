import { readdir, readFile, readlink } from 'node:fs/promises';
import type { Socket } from 'node:net';

/**
 * Who made a loopback TCP connection to this process: `pid:<n>`, the process on this host whose
 * file table holds the client end (its socket inode found in `/proc/net/tcp`, then in
 * `/proc/<pid>/fd`); `relay:<n>` when the client end is this very process's and a runtime's relay
 * registered it (see {@link registerRelayedCaller}: a container's process `<n>`, as the relay's
 * other end found it); `self` for another connection of this process. Null when it cannot be told.
 */
export interface CallerProcessFinder {
  /**
   * Who holds the client end of `socket` (a connection accepted on 127.0.0.1). With `expected`
   * (an earlier answer), only whether it is that caller is checked: a different caller comes back
   * as `other`, without searching every process.
   */
  callerOf(socket: Socket, expected?: string): Promise<string | null>;
}

/** The finder reading `/proc` (`root`, default `/proc`). */
export function procCallerFinder(root = '/proc'): CallerProcessFinder {
  return { callerOf: (socket, expected) => callerOf(root, socket, expected) };
}

/** Whether caller binding can be enforced on this platform (procfs with `/proc/net/tcp`). */
export const CALLER_BINDING_SUPPORTED = process.platform === 'linux';

/**
 * Connections this process relays for a container, by the local port of the relay's connection to
 * the interception server: who the relay's other end says made them.
 */
const relayed = new Map<number, string>();

/**
 * Registers the connection this process opened from `localPort` as relaying for `caller` (e.g.
 * `relay:<host pid>` of the container process the runtime's forwarder found behind it, or null when
 * it found none); returns the function that forgets it (call it when the connection closes).
 */
export function registerRelayedCaller(localPort: number, caller: string | null): () => void {
  const id = caller ?? 'relay:unknown';
  relayed.set(localPort, id);
  return () => {
    if (relayed.get(localPort) === id) relayed.delete(localPort);
  };
}

async function callerOf(root: string, socket: Socket, expected: string | undefined): Promise<string | null> {
  const inode = await clientInode(root, socket);
  if (inode === null) return null;
  const relay = socket.remotePort === undefined ? undefined : relayed.get(socket.remotePort);
  if (relay !== undefined && (await holdsSocket(root, process.pid, inode))) return relay === 'relay:unknown' ? null : relay;
  if (expected?.startsWith('pid:')) {
    return (await holdsSocket(root, Number(expected.slice(4)), inode)) ? expected : 'other';
  }
  if (expected === 'self') return (await holdsSocket(root, process.pid, inode)) ? 'self' : 'other';
  if (expected !== undefined) return 'other';
  const pid = await socketOwner(root, inode);
  if (pid === null) return null;
  return pid === process.pid ? 'self' : `pid:${pid}`;
}

async function clientInode(root: string, socket: Socket): Promise<string | null> {
  const clientPort = socket.remotePort;
  const serverPort = socket.localPort;
  if (!clientPort || !serverPort) return null;
  let table: string;
  try {
    table = await readFile(`${root}/net/tcp`, 'latin1');
  } catch {
    return null;
  }
  // Rows: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …`, addresses
  // as `<hex address>:<hex port>`. The client end is the row whose local port is the client's and
  // whose remote port is the server's (the server's own end has them the other way round).
  const local = `:${hexPort(clientPort)} `;
  const remote = `:${hexPort(serverPort)} `;
  let at = table.indexOf(local);
  while (at !== -1) {
    const lineStart = table.lastIndexOf('\n', at) + 1;
    const lineEnd = table.indexOf('\n', at);
    const fields = table
      .slice(lineStart, lineEnd === -1 ? undefined : lineEnd)
      .trim()
      .split(/\s+/);
    if (fields[1]?.endsWith(local.trimEnd()) && fields[2]?.endsWith(remote.trimEnd()) && isLoopback(fields[1])) {
      const inode = fields[9];
      if (inode && inode !== '0') return inode;
    }
    at = table.indexOf(local, at + local.length);
  }
  return null;
}

async function holdsSocket(root: string, pid: number, inode: string): Promise<boolean> {
  const wanted = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = await readdir(`${root}/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if ((await readlink(`${root}/${pid}/fd/${fd}`)) === wanted) return true;
    } catch {
      // The descriptor closed while we looked: not this one.
    }
  }
  return false;
}

async function socketOwner(root: string, inode: string): Promise<number | null> {
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch {
    return null;
  }
  // Newest processes first: the caller is usually a program started moments ago.
  const pids = entries
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .sort((a, b) => b - a);
  for (const pid of pids) {
    if (await holdsSocket(root, pid, inode)) return pid;
  }
  return null;
}

/** A port as `/proc/net/tcp` writes it: four upper-case hex digits. */
function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}

/** Whether a `/proc/net/tcp` address (`0100007F:1F90`, little-endian IPv4) is in 127.0.0.0/8. */
function isLoopback(address: string): boolean {
  return address.length === 13 && address.slice(6, 8) === '7F';
}
