import { isIP } from 'node:net';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';

/**
 * Outbound network a container may use, as an allow list of `host:port`: the container gets no
 * network at all (`NetworkMode: none`), and each allowed destination is forwarded into its own
 * loopback, so nothing else is reachable — not the internet, not the host's other ports, not
 * other containers. A DNS name is mapped to a loopback address of its own in `/etc/hosts`.
 */
export const EgressSchema = z
  .object({
    /** Destinations (`host:port`) a sandbox may connect to; everything else is unreachable. */
    allow: z.array(z.string()).min(1),
  })
  .strict();
export type Egress = z.infer<typeof EgressSchema>;

/** One allowed destination: where the container connects (`listenHost:port`) and where that goes on the host side. */
export interface EgressRoute {
  /** What the program in the container names (`127.0.0.1`, `api.example.com`). */
  host: string;
  port: number;
  /** The loopback address inside the container the forwarder listens on. */
  listenHost: string;
  /** The address the host side connects to. */
  hostName: string;
}

/** First loopback address handed to DNS names (127.0.1.1, 127.0.1.2, …). */
const NAMED_BASE = 256 + 1;

/**
 * Parses `allow` entries into routes; an entry that is not `host:port`, or names a non-loopback
 * IP address (a program would dial it directly, with no route to forward), is refused with an
 * error naming it.
 */
export function egressRoutes(egress: Egress): EgressRoute[] {
  const routes: EgressRoute[] = [];
  let named = 0;
  for (const [index, entry] of egress.allow.entries()) {
    const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry.trim());
    const port = Number(match?.[2]);
    if (!match?.[1] || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new ConfigError(`egress.allow[${index}]: "${entry}" is not host:port`, { path: `egress.allow[${index}]` });
    const host = match[1].replace(/^\[|\]$/g, '').toLowerCase();
    if (host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host)) {
      const address = host === 'localhost' ? '127.0.0.1' : host;
      routes.push({ host, port, listenHost: address, hostName: address });
    } else if (isIP(host) !== 0) {
      throw new ConfigError(
        `egress.allow[${index}]: "${entry}" is an IP address that is not loopback; allow it by DNS name (a container with an allow list has no route to dial an address directly)`,
      );
    } else {
      if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host))
        throw new ConfigError(`egress.allow[${index}]: "${host}" is not a DNS name`, { path: `egress.allow[${index}]` });
      const existing = routes.find((route) => route.host === host);
      const listenHost = existing?.listenHost ?? loopbackAddress(NAMED_BASE + named++);
      routes.push({ host, port, listenHost, hostName: host });
    }
  }
  return routes;
}

/** `/etc/hosts` lines (Docker's `ExtraHosts`) mapping each allowed DNS name to its loopback address. */
export function egressHosts(routes: EgressRoute[]): string[] {
  const lines = new Set<string>();
  for (const route of routes)
    if (route.host !== route.listenHost && route.host !== 'localhost') lines.add(`${route.host}:${route.listenHost}`);
  return [...lines];
}

function loopbackAddress(n: number): string {
  return `127.0.${Math.floor(n / 256) % 256}.${n % 256}`;
}
