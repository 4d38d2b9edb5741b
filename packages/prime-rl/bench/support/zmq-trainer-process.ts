/**
 * The trainer's end of the ZMQ transport for `pnpm bench:fleet --transport=zmq`, in its own
 * process as prime-rl's trainer ranks would be: `argv[2]` = the sender's PUB address
 * (`tcp://host:port`; READY goes to port + 1), `argv[3]` = the data world size. Each rank pushes
 * its READY and the process takes every rank's messages off the wire without decoding them.
 * Prints one line `{ "ready": true }` once every rank pushed READY; ends when stdin closes.
 */
import { loadZmq, zmqTopic } from '../../src/transport/zmq.ts';

const [address = 'tcp://localhost:5555', world = '1'] = process.argv.slice(2);
const port = Number(address.slice(address.lastIndexOf(':') + 1));
const host = address.slice(0, address.lastIndexOf(':'));
const zmq = await loadZmq();
const subscriber = new zmq.Subscriber({ linger: 0 });
subscriber.connect(address);
for (let rank = 0; rank < Number(world); rank++) subscriber.subscribe?.(zmqTopic(rank));
const pushes = Array.from({ length: Number(world) }, () => {
  const push = new zmq.Push({ linger: 0 });
  push.connect(`${host}:${port + 1}`);
  return push;
});
await Promise.all(pushes.map((push, rank) => push.send(String(rank))));
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
let open = true;
process.stdin.on('end', () => {
  open = false;
  subscriber.close();
  for (const push of pushes) push.close();
  process.exit(0);
});
process.stdin.resume();
while (open) await subscriber.receive().catch(() => []);
