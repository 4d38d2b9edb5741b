import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Http1Call, type Http1Failure, Http1Pool, type Http1Reply } from './http1-pool.ts';

let server: Server | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/**
 * A raw TCP server: `answer(request, socket)` gets each complete request (head and body, read by
 * content-length) and writes whatever bytes it wants, so replies the `node:http` server would
 * never send (split anywhere, chunked by hand, close-delimited, 1xx heads) can be tested.
 */
async function rawServer(answer: (request: string, socket: Socket, index: number) => void) {
  const connections: number[] = [];
  let index = 0;
  server = createServer((socket) => {
    sockets.add(socket);
    connections.push(0);
    const connection = connections.length - 1;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = buffered.slice(0, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        connections[connection] = (connections[connection] ?? 0) + 1;
        answer(request, socket, index++);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { pool: new Http1Pool('127.0.0.1', port), connections, port };
}

/** Sends one request through `pool`; resolves with the reply or the failure. */
function send(pool: Http1Pool, body = '{}'): Promise<Http1Reply | Http1Failure> {
  return new Promise((resolve) => {
    const data = `POST /v1/x HTTP/1.1\r\nhost: h\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    pool.send(new Http1Call(data, { reply: resolve, fail: resolve }));
  });
}

const ok = (body: string, extra = '') =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe('Http1Pool (the lean HTTP/1.1 transport of postJson)', () => {
  it('reads a content-length reply, its headers lower-cased and repeats joined, and reuses the connection', async () => {
    const { pool, connections } = await rawServer((_request, socket, index) =>
      socket.write(ok(`{"n":${index}}`, 'X-Thing: a\r\nx-thing: b\r\n')),
    );
    const first = (await send(pool)) as Http1Reply;
    expect(first.status).toBe(200);
    expect(first.body.toString()).toBe('{"n":0}');
    expect(first.headers['x-thing']).toBe('a, b');
    const second = (await send(pool)) as Http1Reply;
    expect(second.body.toString()).toBe('{"n":1}');
    expect(connections).toEqual([2]);
  });

  it('reads a reply split at every byte, a chunked reply with extensions and trailers, and skips 1xx heads', async () => {
    const { pool } = await rawServer((_request, socket, index) => {
      const reply =
        index === 0
          ? ok('{"é":"split"}')
          : index === 1
            ? 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\n6\r\n:"b"}\n\r\n0\r\nx-trailer: t\r\n\r\n'
            : `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n${ok('{"after":"1xx"}')}`;
      if (index !== 0) return socket.write(reply);
      const bytes = Buffer.from(reply);
      const next = (i: number) => {
        if (i === bytes.length) return;
        socket.write(bytes.subarray(i, i + 1));
        setTimeout(next, 0, i + 1);
      };
      next(0);
    });
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"é":"split"}');
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"a":"b"}\n');
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"after":"1xx"}');
  });

  it('reads a close-delimited reply and opens a new connection after `connection: close`', async () => {
    const { pool, connections } = await rawServer((_request, socket, index) => {
      if (index === 0) socket.end('HTTP/1.1 200 OK\r\n\r\n{"till":"close"}');
      else socket.write(ok('{"closing":true}', 'connection: close\r\n'));
    });
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"till":"close"}');
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"closing":true}');
    expect(((await send(pool)) as Http1Reply).body.toString()).toBe('{"closing":true}');
    expect(connections).toEqual([1, 1, 1]);
  });

  it('drops a free connection the server closed, and one idle past the keep-alive hint', async () => {
    const { pool, connections } = await rawServer((_request, socket, index) => {
      if (index === 0) {
        socket.write(ok('{}'));
        setTimeout(() => socket.end(), 5);
      } else socket.write(ok('{}', 'keep-alive: timeout=1\r\n'));
    });
    await send(pool);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(((await send(pool)) as Http1Reply).status).toBe(200);
    // timeout=1 leaves 0 ms of idle reuse: the next call takes a new connection.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(((await send(pool)) as Http1Reply).status).toBe(200);
    expect(connections).toEqual([1, 1, 1]);
  });

  it('does not send a call again when a reused connection closes without answering (the retry policy decides)', async () => {
    const perConnection = new Map<Socket, number>();
    const { pool, connections } = await rawServer((_request, socket) => {
      const served = perConnection.get(socket) ?? 0;
      perConnection.set(socket, served + 1);
      // Each connection answers one request, then closes on reading the next one.
      if (served === 0) socket.write(ok('{}'));
      else socket.destroy();
    });
    expect(((await send(pool)) as Http1Reply).status).toBe(200);
    expect(await send(pool)).toMatchObject({ kind: 'connection', message: expect.stringMatching(/hang up/) });
    expect(((await send(pool)) as Http1Reply).status).toBe(200);
    expect(connections).toEqual([2, 1]);
  });

  it('fails a connection that hangs up or cuts the body, a reply that is not HTTP and a bad chunk size', async () => {
    const { pool } = await rawServer((_request, socket, index) => {
      if (index === 0) socket.destroy();
      else if (index === 1) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{"a"');
      else if (index === 2) socket.write('SSH-2.0-nope\r\n\r\n');
      else socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1x\r\n{\r\n0\r\n\r\n');
    });
    expect(await send(pool)).toMatchObject({ kind: 'connection', message: expect.stringMatching(/hang up/) });
    expect(await send(pool)).toMatchObject({ kind: 'connection', message: expect.stringMatching(/cut short/) });
    expect(await send(pool)).toMatchObject({ kind: 'connection', message: expect.stringMatching(/not an HTTP\/1.x reply/) });
    expect(await send(pool)).toMatchObject({ kind: 'connection', message: expect.stringMatching(/bad chunk size "1x"/) });
  });

  it('queues calls past maxSockets and sends each when a connection frees', async () => {
    const { connections, port } = await rawServer((_request, socket, index) => {
      setTimeout(() => socket.write(ok(`{"n":${index}}`)), 10);
    });
    const pool = new Http1Pool('127.0.0.1', port, { maxSockets: 2 });
    const replies = await Promise.all(Array.from({ length: 6 }, () => send(pool)));
    expect(replies.map((reply) => (reply as Http1Reply).status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(connections).toEqual([3, 3]);
  });

  it('cancels a queued call and a call in flight (its connection is closed, not reused)', async () => {
    const { connections, port } = await rawServer((_request, socket, index) => {
      if (index > 0) socket.write(ok('{}'));
    });
    const pool = new Http1Pool('127.0.0.1', port, { maxSockets: 1 });
    const outcomes: string[] = [];
    const stuck = new Http1Call('POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n', {
      reply: () => outcomes.push('stuck replied'),
      fail: () => outcomes.push('stuck failed'),
    });
    const queued = new Http1Call('POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n', {
      reply: () => outcomes.push('queued replied'),
      fail: () => outcomes.push('queued failed'),
    });
    pool.send(stuck);
    pool.send(queued);
    pool.cancel(queued);
    await new Promise((resolve) => setTimeout(resolve, 20));
    pool.cancel(stuck);
    expect(((await send(pool)) as Http1Reply).status).toBe(200);
    expect(outcomes).toEqual([]);
    expect(connections).toEqual([1, 1]);
  });
});
