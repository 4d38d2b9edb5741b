import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { ConfigError, LocalRuntime } from '@troupe/verifiers';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerRuntime } from './docker-runtime.ts';
import { egressHosts, egressRoutes } from './egress.ts';

const socket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
const docker = new Docker({ socketPath: socket ?? '/var/run/docker.sock' });
/** busybox `wget` (its `-T` segfaults in the static build): exit 0 and the body when reachable. */
const BUSYBOX = 'troupe-busybox:latest';

describe('egress allow lists (parsing)', () => {
  it('maps loopback entries to themselves and DNS names to loopback addresses of their own', () => {
    const routes = egressRoutes({
      allow: ['127.0.0.1:8000', 'localhost:9000', 'api.example.com:443', 'api.example.com:80', 'x.test:443'],
    });
    expect(routes.map((r) => `${r.host}:${r.port}->${r.listenHost}`)).toEqual([
      '127.0.0.1:8000->127.0.0.1',
      'localhost:9000->127.0.0.1',
      'api.example.com:443->127.0.1.1',
      'api.example.com:80->127.0.1.1',
      'x.test:443->127.0.1.2',
    ]);
    expect(egressHosts(routes)).toEqual(['api.example.com:127.0.1.1', 'x.test:127.0.1.2']);
  });

  it('refuses entries it could not enforce, naming them', () => {
    expect(() => egressRoutes({ allow: ['example.com'] })).toThrow(/egress.allow\[0\]: "example.com" is not host:port/);
    expect(() => egressRoutes({ allow: ['127.0.0.1:80', '10.0.0.5:80'] })).toThrow(/allow\[1\].*not loopback/);
    expect(() => egressRoutes({ allow: ['a_b:80'] })).toThrow(/not a DNS name/);
  });

  it('is refused at the door with network: true, and by the local runtime', () => {
    expect(() => new DockerRuntime({ docker, egress: { allow: ['127.0.0.1:1'] }, network: true })).toThrow(ConfigError);
    expect(() => new DockerRuntime({ docker, egress: { allow: ['bad'] } })).toThrow(/docker.egress.allow\[0\]/);
    // A block list is refused naming the field and the reason, alone or beside an allow list.
    for (const egress of [{ block: ['1.1.1.1:443'] }, { allow: ['127.0.0.1:1'], block: ['example.com:80'] }]) {
      expect(() => new DockerRuntime({ docker, egress } as never)).toThrow(
        /^docker\.egress\.block: a block list is not offered: .*host network.*egress = \{ allow/,
      );
    }
    expect(() => new LocalRuntime({ egress: { allow: ['127.0.0.1:1'] } })).toThrow(
      /local.egress: the local runtime cannot enforce/,
    );
  });
});

describe.skipIf(!socket)('egress allow lists on the real engine', () => {
  const servers: Server[] = [];
  let allowedPort = 0;
  let otherPort = 0;
  let runtime: DockerRuntime;

  const listen = async (body: string) => {
    const server = createServer((_request, response) => response.end(body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return (server.address() as AddressInfo).port;
  };

  beforeAll(async () => {
    allowedPort = await listen('allowed service');
    otherPort = await listen('other service');
    runtime = new DockerRuntime({ docker, image: BUSYBOX, egress: { allow: [`127.0.0.1:${allowedPort}`] } });
  });
  afterAll(async () => {
    await runtime?.close();
    for (const server of servers) server.close();
  });

  const fetchIn = async (sandbox: { exec(c: string): Promise<{ exitCode: number; stdout: string }> }, url: string) =>
    sandbox.exec(`timeout 10 wget -q -O - ${url}`);

  it('reaches the allowed loopback service and nothing else', async () => {
    const sandbox = await runtime.createSandbox();
    try {
      const allowed = await fetchIn(sandbox, `http://127.0.0.1:${allowedPort}/`);
      expect(allowed.exitCode).toBe(0);
      expect(allowed.stdout).toBe('allowed service');
      expect((await fetchIn(sandbox, `http://127.0.0.1:${otherPort}/`)).exitCode).not.toBe(0);
      // The host's own address and the internet: there is no interface but lo to route through.
      expect((await fetchIn(sandbox, 'http://1.1.1.1/')).exitCode).not.toBe(0);
      const interfaces = await sandbox.exec('ls /sys/class/net');
      expect(interfaces.stdout.trim()).toBe('lo');
    } finally {
      await sandbox.stop();
    }
  }, 60_000);

  it('keeps the allow list after killAll restarts the container', async () => {
    const sandbox = await runtime.createSandbox();
    try {
      await sandbox.killAll?.();
      const again = await fetchIn(sandbox, `http://127.0.0.1:${allowedPort}/`);
      expect(again.stdout).toBe('allowed service');
      expect((await fetchIn(sandbox, `http://127.0.0.1:${otherPort}/`)).exitCode).not.toBe(0);
    } finally {
      await sandbox.stop();
    }
  }, 60_000);

  it('forwards an allowed DNS name through /etc/hosts to what the host resolves it to', async () => {
    // The machine's own hostname is a DNS name the host resolves (to a loopback address where the
    // service listens) and the container, with no network, cannot — unless it is allowed.
    const name = hostname().toLowerCase();
    const resolved = await lookup(name).catch(() => undefined);
    if (!resolved || !/^[a-z0-9-]+$/.test(name)) return expect.fail(`the test needs a resolvable hostname (${name})`);
    const named = new DockerRuntime({ docker, image: BUSYBOX, egress: { allow: [`${name}:${allowedPort}`] } });
    const sandbox = await named.createSandbox();
    try {
      const hosts = await sandbox.exec('cat /etc/hosts');
      expect(hosts.stdout).toContain(`127.0.1.1\t${name}`);
      const viaName = await fetchIn(sandbox, `http://${name}:${allowedPort}/`);
      expect(viaName.stdout).toBe('allowed service');
      expect((await fetchIn(sandbox, `http://127.0.0.1:${allowedPort}/`)).exitCode).not.toBe(0);
    } finally {
      await sandbox.stop();
      await named.close();
    }
  }, 60_000);
});
