/**
 * The programs of `bench:interception`'s out-of-process phase, in their own process as harness
 * programs are (so their SDK work does not run on the interception server's event loop). Reads one
 * JSON job per stdin line `{ phase, baseUrl, keys, calls, sessionCalls, thinkMs }`: `keys[p]` lists
 * program p's API keys (rollout secrets, one per `sessionCalls` calls, or the model's key when
 * direct). Every program makes `calls` sequential chat calls with the `openai` SDK, all programs at
 * once, working `thinkMs` on average between calls (uniform in [0, 2·thinkMs], seeded: what a
 * program does with a reply, such as running a tool, before its next call),
 * and the process writes `{ phase, times }` (each call's latency in ms, as the program saw it) or
 * `{ phase, error }` per stdout line. Exits when stdin closes.
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { seededRandom } from '../../src/util/random.ts';

interface Job {
  phase: number;
  baseUrl: string;
  keys: string[][];
  calls: number;
  sessionCalls: number;
  thinkMs: number;
}

const system = 'You are a careful assistant. Answer the arithmetic question and explain briefly. '.repeat(8);

async function runProgram(job: Job, program: number, times: number[]): Promise<void> {
  let sdk: OpenAI | null = null;
  const random = seededRandom(job.phase * 1000 + program);
  for (let i = 0; i < job.calls; i++) {
    if (job.thinkMs > 0) await sleep(2 * job.thinkMs * random());
    if (i % job.sessionCalls === 0) {
      const apiKey = job.keys[program]![Math.floor(i / job.sessionCalls)] ?? job.keys[program]![0]!;
      sdk = new OpenAI({ baseURL: job.baseUrl, apiKey, maxRetries: 0 });
    }
    const question = program * 10_000 + i;
    const started = performance.now();
    const reply = await sdk!.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `Question ${question}: What is ${question} + ${question % 13}?` },
      ],
    });
    if (!reply.choices[0]?.message.content) throw new Error(`program ${program}: empty reply`);
    times.push(performance.now() - started);
  }
}

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const job = JSON.parse(line) as Job;
    const times: number[] = [];
    Promise.all(job.keys.map((_, program) => runProgram(job, program, times)))
      .then(() => ({ phase: job.phase, times }))
      .catch((error: Error) => ({ phase: job.phase, error: error.message }))
      .then((result) => process.stdout.write(`${JSON.stringify(result)}\n`));
  })
  .on('close', () => process.exit(0));
