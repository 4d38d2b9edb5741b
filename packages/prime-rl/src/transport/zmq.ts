import { ConfigError, WireError } from '@troupe/verifiers';
import { decodeMicroBatches, encodeMicroBatches, type WireMicroBatch } from './micro-batch.ts';

/** The few `zeromq` (v6) socket calls used here, typed loosely so the package stays optional. */
interface ZmqSocket {
  bind(address: string): Promise<void>;
  connect(address: string): void;
  close(): void;
  send(message: string | Uint8Array | (string | Uint8Array)[]): Promise<void>;
  receive(): Promise<Uint8Array[]>;
  subscribe?(...topics: string[]): void;
}
interface ZmqModule {
  Publisher: new (options?: Record<string, unknown>) => ZmqSocket;
  Subscriber: new (options?: Record<string, unknown>) => ZmqSocket;
  Pull: new (options?: Record<string, unknown>) => ZmqSocket;
  Push: new (options?: Record<string, unknown>) => ZmqSocket;
}

/** Loads the optional `zeromq` package, or throws saying how to get it. */
export async function loadZmq(): Promise<ZmqModule> {
  try {
    const specifier = 'zeromq';
    return (await import(specifier)) as ZmqModule;
  } catch (error) {
    throw new ConfigError(
      `transport.type = "zmq" needs the optional npm package 'zeromq' (native; install it with \`pnpm add zeromq\`), ` +
        `or use transport.type = "filesystem": ${(error as Error).message}`,
      { path: 'transport.type', cause: error },
    );
  }
}

/** The topic of rank `rank`'s frames: `data_rank|<rank>|`. */
export function zmqTopic(rank: number): string {
  return `data_rank|${rank}|`;
}

/** Options of {@link ZmqRolloutSender.open}. */
export interface ZmqRolloutSenderOptions {
  /** Host to bind (default `localhost` as prime-rl; `127.0.0.1` in tests). */
  host?: string;
  /** PUB port (default 5555); the READY barrier PULL binds `port + 1`. */
  port?: number;
  dataWorldSize: number;
  /** Send high-water mark (default 10, as prime-rl). */
  highWaterMark?: number;
}

/**
 * prime-rl's ZMQ rollout transport, sending side (the orchestrator): PUB on `tcp://host:port`,
 * PULL on `port + 1`. Before the first step it waits once for a READY message (the rank number)
 * from every trainer rank, then sends each step as one two-frame message `[topic, payload]` per
 * rank.
 */
export class ZmqRolloutSender {
  private ready = false;

  private constructor(
    private readonly publisher: ZmqSocket,
    private readonly pull: ZmqSocket,
    readonly dataWorldSize: number,
  ) {}

  static async open(options: ZmqRolloutSenderOptions): Promise<ZmqRolloutSender> {
    const zmq = await loadZmq();
    const host = options.host ?? 'localhost';
    const port = options.port ?? 5555;
    const highWaterMark = options.highWaterMark ?? 10;
    const publisher = new zmq.Publisher({ sendHighWaterMark: highWaterMark, linger: 0 });
    const pull = new zmq.Pull({ receiveHighWaterMark: highWaterMark, linger: 0 });
    await publisher.bind(`tcp://${host}:${port}`);
    await pull.bind(`tcp://${host}:${port + 1}`);
    return new ZmqRolloutSender(publisher, pull, options.dataWorldSize);
  }

  /** Waits for the READY barrier (once), then publishes every rank's micro batches. */
  async send(options: { step: number; microBatches: readonly (readonly WireMicroBatch[])[] }): Promise<void> {
    await this.sendPayloads({ step: options.step, payloads: options.microBatches.map((rank) => encodeMicroBatches(rank)) });
  }

  /** Waits for the READY barrier (once), then publishes already-encoded rank payloads. */
  async sendPayloads(options: { step: number; payloads: readonly Uint8Array[] }): Promise<void> {
    if (options.payloads.length !== this.dataWorldSize) {
      throw new WireError(`rollouts: ${options.payloads.length} rank payloads for a data world size of ${this.dataWorldSize}`, {
        path: 'payloads',
      });
    }
    if (!this.ready) {
      const ranks = new Set<number>();
      while (ranks.size < this.dataWorldSize) {
        const [frame] = await this.pull.receive();
        const rank = Number.parseInt(Buffer.from(frame ?? []).toString('utf8'), 10);
        if (Number.isInteger(rank) && rank >= 0 && rank < this.dataWorldSize) ranks.add(rank);
      }
      this.ready = true;
    }
    for (let rank = 0; rank < this.dataWorldSize; rank++) {
      await this.publisher.send([zmqTopic(rank), options.payloads[rank]!]);
    }
  }

  async close(): Promise<void> {
    this.publisher.close();
    this.pull.close();
  }
}

/**
 * The receiving side (what each trainer rank does): SUB to `data_rank|<rank>|`, PUSH its rank as
 * READY, then one message per step. Our serve-trainer and the tests use it.
 */
export class ZmqRolloutReceiver {
  private constructor(
    private readonly subscriber: ZmqSocket,
    private readonly push: ZmqSocket,
    readonly rank: number,
  ) {}

  static async open(options: { host?: string; port?: number; rank: number }): Promise<ZmqRolloutReceiver> {
    const zmq = await loadZmq();
    const host = options.host ?? 'localhost';
    const port = options.port ?? 5555;
    const subscriber = new zmq.Subscriber({ linger: 0 });
    subscriber.connect(`tcp://${host}:${port}`);
    subscriber.subscribe?.(zmqTopic(options.rank));
    const push = new zmq.Push({ linger: 0 });
    push.connect(`tcp://${host}:${port + 1}`);
    await push.send(String(options.rank));
    return new ZmqRolloutReceiver(subscriber, push, options.rank);
  }

  /** The next step's micro batches for this rank. */
  async receive(): Promise<WireMicroBatch[]> {
    const [topic, payload] = await this.subscriber.receive();
    const name = Buffer.from(topic ?? []).toString('utf8');
    if (name !== zmqTopic(this.rank)) throw new WireError(`zmq: frame for topic '${name}' on rank ${this.rank}`);
    return decodeMicroBatches({ bytes: payload ?? new Uint8Array(), source: `zmq ${name}` });
  }

  async close(): Promise<void> {
    this.subscriber.close();
    this.push.close();
  }
}
