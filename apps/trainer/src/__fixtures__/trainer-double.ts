// A stand-in for prime-rl's FSDP trainer (no GPU here), as a separate process:
//   node --import tsx trainer-double.ts <outputDir> <steps>
// For N = 1..steps it waits for rollouts/step_N/rank_0.bin, decodes it with @msgpack/msgpack
// (a list of micro batches, each an array of fields in prime-rl's order, input_ids first), appends
// a summary line to <outputDir>/trainer-double.jsonl, then writes broadcasts/step_N/ in a format
// the orchestrator cannot read — `model.safetensors` is a named pipe with no writer, so whoever
// opens it for reading blocks for ever — and touches STABLE last, as prime-rl does.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decode } from '@msgpack/msgpack';

const [outputDir, stepsArg] = process.argv.slice(2);
if (!outputDir || !stepsArg) throw new Error('usage: trainer-double.ts <outputDir> <steps>');
const steps = Number(stepsArg);

async function waitFor(path: string): Promise<void> {
  while (!existsSync(path)) await new Promise((resolve) => setTimeout(resolve, 20));
}

for (let step = 1; step <= steps; step++) {
  const rank = join(outputDir, 'rollouts', `step_${step}`, 'rank_0.bin');
  await waitFor(rank);
  const batches = decode(await readFile(rank)) as unknown[][];
  if (!Array.isArray(batches)) throw new Error(`${rank}: not a msgpack list of micro batches`);
  const tokens = batches.reduce((sum, batch) => sum + (batch[0] as unknown[]).length, 0);
  await appendFile(
    join(outputDir, 'trainer-double.jsonl'),
    `${JSON.stringify({ step, microBatches: batches.length, tokens })}\n`,
  );
  const dir = join(outputDir, 'broadcasts', `step_${step}`);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), '{"architectures":["Qwen3ForCausalLM"]}\n');
  execFileSync('mkfifo', [join(dir, 'model.safetensors')]);
  await writeFile(join(dir, 'STABLE'), '');
}
