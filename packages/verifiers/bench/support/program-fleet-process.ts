/**
 * The programs of `bench:load`, in their own process as real harness programs would be: reads
 * one JSON job per stdin line `{ id, baseUrl, secret, body }`, POSTs `body` to
 * `${baseUrl}/chat/completions` with the rollout secret as bearer key, and writes
 * `{ id, status, text }` per stdout line. With `--idle`, it instead only measures its own event
 * loop lag (a control for machine noise) and prints `{ idle_lag_p99_ms }` when stdin closes.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

if (process.argv.includes('--idle')) {
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  process.stdin.on('end', () => {
    lag.disable();
    process.stdout.write(`${JSON.stringify({ idle_lag_p99_ms: lag.percentile(99) / 1e6 })}\n`);
    process.exit(0);
  });
  process.stdin.resume();
} else {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const job = JSON.parse(line) as { id: number; baseUrl: string; secret: string; body: unknown };
    fetch(`${job.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${job.secret}` },
      body: JSON.stringify(job.body),
    })
      .then(async (response) => ({ id: job.id, status: response.status, text: await response.text() }))
      .catch((error: Error) => ({
        id: job.id,
        status: 0,
        text: `${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`,
      }))
      .then((result) => process.stdout.write(`${JSON.stringify(result)}\n`));
  });
  lines.on('close', () => process.exit(0));
}
