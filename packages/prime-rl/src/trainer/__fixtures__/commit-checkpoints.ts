// Commits checkpoints of steps `from`, `from + 1`, … to the run directory `out` forever, printing
// `committed <step>` after each; the crash test kills it with SIGKILL at random points.
import { commitCheckpoint, writeCheckpointFiles } from '../checkpoint.ts';

const [out, from] = process.argv.slice(2);
const weight = (step: number) => ({ name: 'w', shape: [256, 256], data: new Float32Array(256 * 256).fill(step) });
for (let step = Number(from); ; step++) {
  await commitCheckpoint({
    out: out as string,
    step,
    pointers: step % 3 === 0 ? ['checkpoint', `checkpoint-step-${step}`] : ['checkpoint'],
    write: (dir) =>
      writeCheckpointFiles({ dir, step, state: { step }, weights: [weight(step)], optimizer: { step, m: [weight(step)], v: [weight(step)] } }),
  });
  process.stdout.write(`committed ${step}\n`);
}
