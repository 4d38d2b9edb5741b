import { describe, expect, it } from 'vitest';
import { PolicyConfigSchema } from '../policy/config.ts';
import type { TrainRow } from './config.ts';
import { localTrainer, type TrainerHandle, workerTrainer } from './handle.ts';

const policy = PolicyConfigSchema.parse({
  vocabSize: 12,
  contextLength: 8,
  dModel: 16,
  layers: 1,
  heads: 2,
  outputTokens: [8, 9, 5],
  seed: 3,
});

/** Rows of every kind the loss reads: rl rows, a ce row, a ref_kl row with teacher logprobs, different lengths. */
function rows(step: number): TrainRow[] {
  const out: TrainRow[] = [];
  for (let i = 0; i < 24; i++) {
    const token = [8, 9, 5][(i + step) % 3] as number;
    const prompt = i % 2 ? [2, 6, 4] : [2, 6, 4, 7, 3];
    const n = prompt.length + 1;
    const last = (v: number) => Array.from({ length: n }, (_, j) => (j === n - 1 ? v : 0));
    out.push({
      tokenIds: [...prompt, token],
      mask: last(1).map(Boolean),
      logprobs: last(-1.1 + i / 100),
      advantages: last(((i % 5) - 2) / 3),
    });
  }
  out.push({ ...(out[0] as TrainRow), rlWeights: Array(6).fill(0), ceWeights: [0, 0, 0, 0, 0, 1] });
  out.push({ ...(out[1] as TrainRow), rlWeights: Array(4).fill(0), refKlWeights: [0, 0, 0, 1], refLogprobs: [0, 0, 0, -0.7] });
  return out;
}

async function train(handle: TrainerHandle) {
  const steps = [];
  for (let step = 0; step < 3; step++) steps.push(await handle.train(rows(step), { lr: 0.01 }));
  await handle.close();
  return steps.map(({ metrics, weights }) => ({ metrics: { ...metrics, ms: 0 }, weights }));
}

describe('workerTrainer', () => {
  it('trains exactly as the trainer in this thread: the same metrics and weights, step by step', async () => {
    const local = await train(await localTrainer({ policy, trainer: { lr: 0.01 } }));
    const worker = await train(await workerTrainer({ policy, trainer: { lr: 0.01 } }));
    expect(worker).toEqual(local);
  }, 60_000);
});
