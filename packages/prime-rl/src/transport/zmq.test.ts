import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { WireSample } from './micro-batch.ts';
import { prepareBatch } from './prepare-batch.ts';
import { loadZmq, ZmqRolloutReceiver, ZmqRolloutSender } from './zmq.ts';

const zmqAvailable = await loadZmq().then(
  () => true,
  (error: Error) => {
    console.warn(`zmq transport: skipped, ${error.message}`);
    return false;
  },
);

/** Two free consecutive loopback ports (PUB on `port`, READY on `port + 1`). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const next = await new Promise<boolean>((resolve) => {
      const server = createServer()
        .once('error', () => resolve(false))
        .listen(port + 1, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (next) return port;
  }
}

const sample = (length: number, env: string): WireSample => ({
  tokenIds: Array.from({ length }, (_, t) => 3 + t),
  mask: Array.from({ length }, (_, t) => t >= 2),
  logprobs: Array.from({ length }, (_, t) => (t >= 2 ? -0.5 : 0)),
  temperatures: 1,
  envName: env,
  advantages: Array.from({ length }, (_, t) => (t >= 2 ? 1 : 0)),
});

describe.skipIf(!zmqAvailable)('ZMQ rollout transport', () => {
  it('waits for READY from every rank, then sends each rank its micro batches under data_rank|<r>|', async () => {
    const port = await freePortPair();
    const sender = await ZmqRolloutSender.open({ host: '127.0.0.1', port, dataWorldSize: 2 });
    const receivers = await Promise.all([0, 1].map((rank) => ZmqRolloutReceiver.open({ host: '127.0.0.1', port, rank })));
    try {
      for (const step of [1, 2]) {
        const grid = prepareBatch({
          samples: [sample(6 + step, 'a'), sample(5, 'b'), sample(4, 'a'), sample(3, 'b')],
          seqLen: 10,
          dataWorldSize: 2,
        });
        const received = Promise.all(receivers.map((receiver) => receiver.receive()));
        await sender.send({ step, microBatches: grid });
        expect(await received).toEqual(grid);
      }
    } finally {
      await Promise.all(receivers.map((receiver) => receiver.close()));
      await sender.close();
    }
  });
});
