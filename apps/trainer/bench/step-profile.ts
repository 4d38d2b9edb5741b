// Profile of one training step of the default Kuhn config, phase by phase, in CPU milliseconds
// of this process (so the figures mean something on a shared machine too): rollouts (Env,
// seats, interception, micro-batched onnxruntime), scoring, sample building, the trainer step
// (wasm), weight export + session swap, and the policy-table evaluation. Last line: JSON.
import {
  createAlgorithm,
  episodesToSamples,
  exportOnnx,
  initTfBackend,
  initWeights,
  PolicyModelClient,
  Trainer,
} from '@troupe/prime-rl';
import { Env, kuhnPokerEnv, kuhnTaskset } from '@troupe/verifiers';
import { TrainRunConfigSchema } from '../src/config.ts';
import { registerGameRuntime } from '../src/game-runtime.ts';
import { kuhnPolicyConfig, kuhnPolicyTable, kuhnTokenizer } from '../src/kuhn-policy.ts';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const config = TrainRunConfigSchema.parse(args.has('config') ? JSON.parse(args.get('config') as string) : {});
const steps = Number(args.get('steps') ?? 3);
registerGameRuntime();
const backend = await initTfBackend();
const tokenizer = kuhnTokenizer(config.prompts);
const policy = kuhnPolicyConfig({
  tokenizer,
  maxTokens: config.sampling.maxTokens,
  ...config.policy,
  seed: 0,
  prompts: config.prompts,
});
const weights = initWeights(policy);
const trainer = new Trainer({ policy, weights, trainer: config.trainer });
const client = await PolicyModelClient.create({
  tokenizer,
  config: policy,
  onnx: exportOnnx({ config: policy, weights }),
  maxBatch: config.inference.maxBatch,
  maxTokens: config.sampling.maxTokens,
  seed: 1,
});
const algorithm = createAlgorithm(config.algorithm);
const env = await Env.create({
  definition: kuhnPokerEnv,
  config: { id: 'kuhn-poker', prompts: config.prompts, player0: { runtime: 'game' }, player1: { runtime: 'game' } },
  run: { model: 'policy', client, sampling: { temperature: config.sampling.temperature, maxTokens: config.sampling.maxTokens } },
});
const taskset = kuhnTaskset();
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const phases: Record<string, number> = {};
const add = (k: string, v: number) => {
  phases[k] = (phases[k] ?? 0) + v / steps;
};
let task = 0;
let hands = 0;
let decisions = 0;
let trainTokens = 0;
let padded = 0;
for (let s = 0; s <= steps; s++) {
  const measure = s > 0; // step 0 warms up
  const f0 = { ...client.stats };
  let c = cpu();
  const groups = await Promise.all(
    Array.from({ length: config.groupsPerStep }, async () => {
      const t = taskset.at(task++);
      return Promise.all(
        Array.from({ length: config.groupSize }, (_, index) => env.runEpisode({ task: t, group: { id: `g${task}`, index } })),
      );
    }),
  );
  const rollout = cpu() - c;
  c = cpu();
  for (const g of groups) await algorithm.scoreGroup(g);
  const score = cpu() - c;
  c = cpu();
  const samples = episodesToSamples({ episodes: groups.flat() });
  const build = cpu() - c;
  c = cpu();
  const m = trainer.trainStep(samples);
  const trainMs = cpu() - c;
  c = cpu();
  const w = trainer.getWeights();
  await client.updateWeights({ onnx: exportOnnx({ config: policy, weights: w }), version: s + 1 });
  const swap = cpu() - c;
  c = cpu();
  await kuhnPolicyTable({ tokenizer, nextLogits: (tokens) => client.nextLogits(tokens), prompts: config.prompts });
  const evalMs = cpu() - c;
  if (!measure) continue;
  hands += groups.flat().length;
  for (const e of groups.flat()) for (const t of e.traces) decisions += t.calls.length;
  add('rollout', rollout);
  add('rollout.forward', client.stats.forwardMs - f0.forwardMs);
  add('rollout.passes', client.stats.batches - f0.batches);
  add('score', score);
  add('samples', build);
  add('train', trainMs);
  add('swap', swap);
  add('eval', evalMs);
  trainTokens += m.paddedTokens;
  padded = m.paddedLength;
}
const perStep = Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Math.round(v * 10) / 10]));
console.log(
  `backend ${backend}; per step (CPU ms unless noted): ${JSON.stringify(perStep)}; ${hands / steps} hands, ${decisions / steps} decisions, ${trainTokens / steps} padded train tokens (T=${padded}) per step`,
);
const total = Object.entries(phases)
  .filter(([k]) => !k.includes('.'))
  .reduce((a, [, v]) => a + v, 0);
console.log(
  JSON.stringify({
    name: 'kuhn_step_profile',
    value: total,
    unit: 'cpu_ms_per_step',
    baseline: null,
    ratio: null,
    ...perStep,
    handsPerStep: hands / steps,
    decisionsPerStep: decisions / steps,
    rolloutCpuMsPerHand: (phases.rollout ?? 0) / (hands / steps),
  }),
);
