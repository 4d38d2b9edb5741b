/**
 * The vLLM-shaped fleet of `pnpm bench:fleet` in its own process, as real servers would be. Options
 * come as one JSON argument ({@link VllmFleetOptions}). It prints one line `{ baseUrls, meanTokens }`
 * once it listens; then each `mark` line on stdin answers one line with the requests and completion
 * tokens served and the CPU it used since the last mark (user + system, ms). Closing stdin ends it.
 */
import { createInterface } from 'node:readline';
import { VllmFleet, type VllmFleetOptions } from './vllm-fleet.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as VllmFleetOptions;
const fleet = await VllmFleet.start(options);
let cpu = process.cpuUsage();
let since = performance.now();
process.stdout.write(`${JSON.stringify({ baseUrls: fleet.baseUrls, meanTokens: fleet.meanCompletionTokens() })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() !== 'mark') return;
  const used = process.cpuUsage(cpu);
  const now = performance.now();
  const tally = fleet.mark();
  process.stdout.write(`${JSON.stringify({ ...tally, cpuMs: (used.user + used.system) / 1000, wallMs: now - since })}\n`);
  cpu = process.cpuUsage();
  since = now;
});
lines.on('close', () => {
  void fleet.close().then(() => process.exit(0));
});
