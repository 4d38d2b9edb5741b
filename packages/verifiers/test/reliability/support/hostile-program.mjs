// A hostile program, run as its own process: it makes CALLS distinct chat calls of BYTES bytes
// each through the interception endpoint, CONCURRENCY at a time (or, with PROMPT, calls with that
// prompt: a well-behaved program), and prints one JSON line with the
// HTTP status of each call. It always exits 0 (the eval decides what happened from the trace).
import { request } from 'node:http';

const { BASE_URL, KEY } = process.env;
const calls = Number(process.env.CALLS ?? 1);
const bytes = Number(process.env.BYTES ?? 100);
const concurrency = Number(process.env.CONCURRENCY ?? 1);

function bodyOf(index) {
  if (process.env.PROMPT)
    return Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: process.env.PROMPT }] }));
  // Distinct content per call (nothing is shared with an earlier message), built as one buffer.
  const head = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"call ${index} `);
  const tail = Buffer.from('"}]}');
  const filler = Buffer.alloc(Math.max(0, bytes - head.length - tail.length), 0x61 + (index % 26));
  return Buffer.concat([head, filler, tail]);
}

function call(index) {
  const body = bodyOf(index);
  const url = new URL(`${BASE_URL}/chat/completions`);
  return new Promise((resolve) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${KEY}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', (error) => resolve(error.code ?? 'error'));
    req.end(body);
  });
}

const statuses = new Array(calls);
let next = 0;
async function worker() {
  while (next < calls) {
    const index = next++;
    statuses[index] = await call(index);
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, worker));
process.stdout.write(`${JSON.stringify({ statuses })}\n`);
