// The two ends of registry-only.sh's relay: the only way out of its network namespace.
//   node registry-relay.mjs outside SOCKET          (host side) each connection on the Unix socket
//                                                   is piped to registry.npmjs.org:443
//   node registry-relay.mjs inside SOCKET -- CMD…   (jail side) 127.0.0.1:443 is piped to the
//                                                   socket; runs CMD, exits with its code
// TLS is never opened here: the client talks to the real registry and checks its certificate, so
// nothing but registry.npmjs.org can be reached through the relay.
import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

const REGISTRY = 'registry.npmjs.org';
const [side, socket, separator, ...command] = process.argv.slice(2);

/** Pipes two sockets both ways; either end closing or failing closes the other. */
function pipe(a, b) {
  a.pipe(b);
  b.pipe(a);
  for (const [x, y] of [
    [a, b],
    [b, a],
  ])
    x.on('error', () => y.destroy()).on('close', () => y.destroy());
}

if (side === 'outside' && socket) {
  const server = createServer((client) => pipe(client, createConnection({ host: REGISTRY, port: 443 })));
  server.listen(socket, () => process.stdout.write('ready\n'));
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
} else if (side === 'inside' && socket && separator === '--' && command.length > 0) {
  const server = createServer((client) => pipe(client, createConnection(socket)));
  server.listen({ host: '127.0.0.1', port: 443 }, () => {
    const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
    child.on('exit', (code, signal) => {
      server.close();
      process.exit(code ?? 128 + (signal === 'SIGINT' ? 2 : 15));
    });
  });
} else {
  process.stderr.write('usage: registry-relay.mjs outside SOCKET | inside SOCKET -- COMMAND [ARG]...\n');
  process.exit(2);
}
