// Inference throughput: decisions per second of the full Kuhn self-play loop (Env, seats, interception
// recording, micro-batched onnxruntime policy) against raw onnxruntime forward passes of the same
// model at the same batch size and sequence length, in one run. Last line: JSON.

import { exportOnnx, OnnxPolicy, PolicyModelClient } from '@troupe/prime-rl/inference';
import { embeddedPolicy } from '@troupe/prime-rl/orchestrator';
import { initWeights } from '@troupe/prime-rl/policy';
import { Env, kuhnPokerEnv, kuhnTaskset, kuhnTraining, registerRuntime } from '@troupe/verifiers';
import { GameRuntime } from '../src/game-runtime.ts';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const hands = Number(args.get('hands') ?? 8192);
const concurrent = Number(args.get('concurrent') ?? 576);
registerRuntime('game', () => new GameRuntime());
// The default training run's shape: prompt style, reply length, model, re-asks.
const run = {
  prompts: 'pass-bet' as const,
  invalidRetries: 1,
  sampling: { temperature: 1, maxTokens: 1 },
  inference: { maxBatch: 512 },
};
const { tokenizer, policy: config } = embeddedPolicy({
  sources: [{ hooks: kuhnTraining as never, options: { prompts: run.prompts }, taskset: kuhnTaskset() }],
  dModel: 32,
  layers: 1,
  heads: 4,
  ffnMult: 2,
  initStd: 0.1,
  seed: 0,
  maxTokens: run.sampling.maxTokens,
});
const onnx = exportOnnx({ config, weights: initWeights(config) });
const client = await PolicyModelClient.create({
  tokenizer,
  config,
  onnx,
  maxBatch: run.inference.maxBatch,
  maxTokens: run.sampling.maxTokens,
  seed: 1,
});
const env = await Env.create({
  definition: kuhnPokerEnv,
  config: {
    id: 'kuhn-poker',
    prompts: run.prompts,
    invalidRetries: run.invalidRetries,
    player0: { runtime: 'game' },
    player1: { runtime: 'game' },
  },
  run: { model: 'policy', client, sampling: { temperature: run.sampling.temperature, maxTokens: run.sampling.maxTokens } },
});
const taskset = kuhnTaskset();
const play = async (from: number, count: number) => {
  let decisions = 0;
  let promptTokens = 0;
  for (let start = 0; start < count; start += concurrent) {
    const episodes = await Promise.all(
      Array.from({ length: Math.min(concurrent, count - start) }, (_, i) =>
        env.runEpisode({ task: taskset.at(from + start + i), group: { id: 'b', index: 0 } }),
      ),
    );
    for (const e of episodes)
      for (const t of e.traces)
        for (const c of t.calls) {
          decisions++;
          promptTokens += c.usage?.promptTokens ?? 0;
        }
  }
  return { decisions, promptTokens };
};
await play(10_000_000, 1024); // warm-up (JIT, onnxruntime arenas): a short one left the timed window mostly warm-up
const before = { ...client.stats };
const t0 = performance.now();
const { decisions, promptTokens } = await play(0, hands);
const loopSeconds = (performance.now() - t0) / 1000;
const rows = client.stats.rows - before.rows;
const batches = client.stats.batches - before.batches;
const batch = Math.max(1, Math.round(rows / batches));
const time = Math.max(2, Math.round(promptTokens / decisions) + 1);
const loopRate = decisions / loopSeconds;

// Raw forward passes: same model, same batch size, same mean sequence length, same number of rows.
const raw = await OnnxPolicy.load({ model: onnx, vocabSize: config.vocabSize });
const tokens = Int32Array.from({ length: batch * time }, (_, i) => 6 + (i % (config.vocabSize - 6)));
const last = Array.from({ length: batch }, (_, b) => b * time + time - 1);
await raw.logits({ tokens, batch, time, rows: last });
const t1 = performance.now();
let done = 0;
while (done < rows) {
  await raw.logits({ tokens, batch, time, rows: last });
  done += batch;
}
const rawRowsPerSecond = done / ((performance.now() - t1) / 1000);
const rawRate = rawRowsPerSecond / (rows / decisions);
console.log(
  `${hands} hands, ${decisions} decisions in ${loopSeconds.toFixed(2)} s (${loopRate.toFixed(0)}/s); ${batches} forward passes, mean batch ${batch}, mean prompt ${time} tokens; raw onnxruntime at that batch: ${rawRate.toFixed(0)} decisions/s`,
);
console.log(
  JSON.stringify({
    name: 'selfplay_decisions_per_second_vs_raw_onnx',
    value: loopRate,
    unit: 'decisions/s',
    baseline: rawRate,
    ratio: loopRate / rawRate,
    batch,
    time,
    hands,
    goal: 0.5,
  }),
);
await raw.release();
