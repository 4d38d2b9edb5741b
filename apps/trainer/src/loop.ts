import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Algorithm,
  createAlgorithm,
  episodesToSamples,
  exportOnnx,
  flattenRoleMetrics,
  initTfBackend,
  initWeights,
  loadCheckpoint,
  localTrainer,
  type NamedWeight,
  PolicyModelClient,
  roleMetrics,
  saveCheckpoint,
  type TrainerHandle,
  WordTokenizer,
  workerTrainer,
} from '@troupe/prime-rl';
import {
  Env,
  type Episode,
  KUHN_INFO_SETS,
  type KuhnPolicyTable,
  kuhnAveragePolicy,
  kuhnExpectedPayoff,
  kuhnNashConv,
  kuhnPokerEnv,
  kuhnTaskset,
} from '@troupe/verifiers';
import { type TrainRunConfig, type TrainRunConfigInput, TrainRunConfigSchema } from './config.ts';
import { registerGameRuntime } from './game-runtime.ts';
import { kuhnPolicyConfig, kuhnPolicyTable, kuhnTokenizer } from './kuhn-policy.ts';
import { writeReport } from './report.ts';

/** One line of `metrics.jsonl`. */
export type StepMetrics = Record<string, number | string | null>;

export interface TrainOptions {
  config: TrainRunConfigInput;
  out: string;
  resume?: boolean;
  /** Called with each step's metrics (the CLI draws its progress from it). */
  onStep?: (metrics: StepMetrics) => void;
  log?: (line: string) => void;
}

export interface TrainResult {
  steps: number;
  hands: number;
  nashConv: number;
  nashConvAverage: number;
  seconds: number;
  backend: string;
  table: KuhnPolicyTable;
}

interface Batch {
  episodes: Episode[];
  version: number;
  ms: number;
}

/** The loop state saved in checkpoints besides weights and optimizer. */
interface LoopState {
  config: TrainRunConfig;
  tokenizer: unknown;
  algorithm: unknown;
  rng: number;
  nextTask: number;
  hands: number;
  averageTables: KuhnPolicyTable | null;
  averageWeight: number;
}

/**
 * The embedded RL loop. Each step: the orchestrator plays `groupsPerStep × groupSize` hands of
 * the env with the policy's ModelClient (a group = one task played groupSize times), scores each
 * group with the algorithm, turns trainable traces into samples, and the trainer takes one
 * step; the new weights are exported to ONNX and swapped into inference. Rollouts for step
 * n+1 run while step n trains (at most one step ahead); a batch whose policy is more than
 * `maxOffPolicySteps` behind is dropped. Every `evalEvery` steps the policy is queried at the
 * 12 information sets: `policy-table.json`, the sequence-form average `policy-table-average.json`
 * (iterate t weighted by t), and both exact NashConvs in `metrics.jsonl`.
 */
export async function train(options: TrainOptions): Promise<TrainResult> {
  const started = performance.now();
  registerGameRuntime();
  const log = options.log ?? (() => {});
  const out = options.out;
  await mkdir(out, { recursive: true });
  const ckptDir = join(out, 'checkpoint');
  const resumed = options.resume && existsSync(join(ckptDir, 'meta.json')) ? await loadCheckpoint({ dir: ckptDir }) : null;
  const config: TrainRunConfig = resumed
    ? TrainRunConfigSchema.parse({
        ...(resumed.state.loop as LoopState).config,
        maxSteps: TrainRunConfigSchema.parse(options.config).maxSteps,
      })
    : TrainRunConfigSchema.parse(options.config);
  const loopState = resumed?.state.loop as LoopState | undefined;
  const tokenizer = loopState ? WordTokenizer.fromJSON(loopState.tokenizer) : kuhnTokenizer(config.prompts);
  const policy = kuhnPolicyConfig({
    tokenizer,
    maxTokens: config.sampling.maxTokens,
    ...config.policy,
    seed: config.seed,
    prompts: config.prompts,
  });
  const startWeights: NamedWeight[] = resumed?.weights ?? initWeights(policy);
  const backendPromise = initTfBackend();
  const init = { policy, weights: startWeights, trainer: config.trainer, ...(resumed ? { optimizer: resumed.optimizer } : {}) };
  let trainer: TrainerHandle;
  if (config.workerThread) {
    try {
      trainer = await workerTrainer(init);
    } catch (error) {
      log(`worker thread unavailable (${(error as Error).message.split('\n')[0]}); training in this thread`);
      trainer = await localTrainer(init);
    }
  } else trainer = await localTrainer(init);
  await backendPromise;
  log(
    `trainer backend: ${trainer.backend}${config.workerThread ? ' (worker thread)' : ''}; inference: onnxruntime-node (1 thread)`,
  );
  const startStep = resumed?.step ?? 0;
  const client = await PolicyModelClient.create({
    tokenizer,
    config: policy,
    onnx: exportOnnx({ config: policy, weights: startWeights }),
    version: startStep,
    maxBatch: config.inference.maxBatch,
    maxWaitMs: config.inference.maxWaitMs,
    maxTokens: config.sampling.maxTokens,
    seed: config.seed * 7919 + 1,
  });
  if (loopState) client.rng.state = loopState.rng;
  const algorithm: Algorithm = createAlgorithm(config.algorithm);
  algorithm.validateEnv?.({ id: 'kuhn-poker', roles: ['player0', 'player1'], zeroSum: true });
  if (loopState?.algorithm != null) algorithm.loadState?.(loopState.algorithm);
  const env = await Env.create({
    definition: kuhnPokerEnv,
    config: {
      id: 'kuhn-poker',
      prompts: config.prompts,
      invalidRetries: config.invalidRetries,
      player0: { runtime: 'game' },
      player1: { runtime: 'game' },
    },
    run: {
      model: 'policy',
      client,
      sampling: { temperature: config.sampling.temperature, maxTokens: config.sampling.maxTokens },
    },
  });
  const taskset = kuhnTaskset({ deals: config.deals });
  let nextTask = loopState?.nextTask ?? 0;
  let hands = loopState?.hands ?? 0;
  let average: KuhnPolicyTable | null = loopState?.averageTables ?? null;
  let averageWeight = loopState?.averageWeight ?? 0;
  if (!resumed) await writeFile(join(out, 'metrics.jsonl'), '');
  else {
    // Steps after the checkpoint are played again: drop their metrics so each step appears once.
    const lines = (await readFile(join(out, 'metrics.jsonl'), 'utf8').catch(() => '')).split('\n');
    const kept = lines.filter((line) => {
      try {
        return line.trim() !== '' && (JSON.parse(line) as { step: number }).step <= startStep;
      } catch {
        return false;
      }
    });
    await writeFile(join(out, 'metrics.jsonl'), kept.map((line) => `${line}\n`).join(''));
  }
  await writeFile(join(out, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);

  // Orchestrator state at the start of the latest rollout: what a checkpoint must restore so a
  // resumed run re-plays that rollout (it is still in flight when the checkpoint is written).
  let snapshot = { nextTask, rng: client.rng.state, algorithm: (algorithm.state?.() ?? null) as unknown };
  const rollout = async (): Promise<Batch> => {
    snapshot = { nextTask, rng: client.rng.state, algorithm: algorithm.state?.() ?? null };
    const t0 = performance.now();
    const version = client.version;
    const groups = Array.from({ length: config.groupsPerStep }, () => nextTask++);
    const episodes = await Promise.all(
      groups.map(async (taskIndex) => {
        const task = taskset.at(taskIndex);
        const id = `task-${taskIndex}`;
        const eps = await Promise.all(
          Array.from({ length: config.groupSize }, (_, index) => env.runEpisode({ task, group: { id, index } })),
        );
        await algorithm.scoreGroup(eps);
        return eps;
      }),
    );
    return { episodes: episodes.flat(), version, ms: performance.now() - t0 };
  };

  let table: KuhnPolicyTable | null = null;
  let nashConv = Number.NaN;
  let nashConvAverage = Number.NaN;
  let pending = rollout();
  let step = startStep;
  while (step < config.maxSteps) {
    const stepStart = performance.now();
    const batch = await pending;
    const staleness = step - batch.version;
    // Start the next batch now: it plays with the current weights while this one trains.
    const nextBatch = step + 1 < config.maxSteps ? rollout() : null;
    if (staleness > config.maxOffPolicySteps) {
      log(`step ${step + 1}: dropped a batch ${staleness} steps stale`);
      if (nextBatch) pending = nextBatch;
      continue;
    }
    const samples = episodesToSamples({ episodes: batch.episodes });
    const t1 = performance.now();
    const lr = scheduledLr(config, step);
    const refKlTau = scheduledRefKlTau(config, step);
    const beta1 = scheduledBeta1(config, step);
    const { metrics: tm, weights } = await trainer.train(samples, { lr, refKlTau, ...(beta1 !== undefined ? { beta1 } : {}) });
    const trainMs = performance.now() - t1;
    step++;
    const t2 = performance.now();
    await client.updateWeights({ onnx: exportOnnx({ config: policy, weights }), version: step });
    const swapMs = performance.now() - t2;
    hands += batch.episodes.length;
    const roles = flattenRoleMetrics({ metrics: roleMetrics({ episodes: batch.episodes }) });
    let forfeits = 0;
    let p0 = 0;
    for (const e of batch.episodes) {
      if (e.traces.some((t) => t.metrics.forfeit === 1)) forfeits++;
      p0 += e.byAgent.player0?.[0]?.rewards.payoff?.score ?? 0;
    }
    const line: StepMetrics = {
      step,
      hands,
      policy_version: batch.version,
      staleness,
      forfeit_rate: forfeits / batch.episodes.length,
      player0_payoff: p0 / batch.episodes.length,
      samples: samples.length,
      ...Object.fromEntries(Object.entries(roles).map(([k, v]) => [k, v])),
      lr,
      ref_kl_tau: refKlTau,
      beta1: beta1 ?? config.trainer.betas[0],
      loss: tm.loss,
      rl_loss: tm.rlLoss,
      ref_kl: tm.refKl,
      entropy: tm.entropy,
      mismatch_kl: tm.mismatchKl,
      masked_fraction: tm.maskedFraction,
      grad_norm: tm.gradNorm,
      tokens: tm.tokens,
      padded_tokens: tm.paddedTokens,
      rollout_ms: batch.ms,
      train_ms: trainMs,
      trainer_gflops: tm.flops / tm.ms / 1e6,
      swap_ms: swapMs,
    };
    if (step % config.evalEvery === 0 || step === config.maxSteps) {
      const t3 = performance.now();
      table = await kuhnPolicyTable({ tokenizer, nextLogits: (tokens) => client.nextLogits(tokens), prompts: config.prompts });
      // Linear averaging (iterate t weighs t, as in CFR+): the early, far-from-equilibrium
      // iterates fade instead of anchoring the average.
      average = average ? kuhnAveragePolicy([average, table], [averageWeight, step]) : table;
      averageWeight += step;
      nashConv = kuhnNashConv(table);
      nashConvAverage = kuhnNashConv(average);
      line.nash_conv = nashConv;
      line.nash_conv_average = nashConvAverage;
      line.game_value = kuhnExpectedPayoff(table);
      line.eval_ms = performance.now() - t3;
      await writeFile(join(out, 'policy-table.json'), `${tableJson(table)}\n`);
      await writeFile(join(out, 'policy-table-average.json'), `${tableJson(average)}\n`);
    }
    line.step_ms = performance.now() - stepStart;
    line.elapsed_s = (performance.now() - started) / 1000;
    await appendFile(join(out, 'metrics.jsonl'), `${JSON.stringify(line)}\n`);
    options.onStep?.(line);
    if (step % config.checkpointEvery === 0 || step === config.maxSteps) {
      // The rollout in flight is re-played after a resume: the checkpoint holds the state before it.
      const state: LoopState = {
        config,
        tokenizer: tokenizer.toJSON(),
        algorithm: snapshot.algorithm,
        rng: snapshot.rng,
        nextTask: snapshot.nextTask,
        hands,
        averageTables: average,
        averageWeight,
      };
      await saveCheckpoint({ dir: ckptDir, step, state: { loop: state }, weights, optimizer: await trainer.optimizerState() });
    }
    if (nextBatch) pending = nextBatch;
  }
  await trainer.close();
  await writeReport({ out });
  if (!table) throw new Error('no evaluation step ran');
  return {
    steps: step,
    hands,
    nashConv,
    nashConvAverage,
    seconds: (performance.now() - started) / 1000,
    backend: trainer.backend,
    table,
  };
}

/**
 * The learning rate of step `step` (0-based): cosine from `trainer.lr` to `trainer.lr × lrFinalFraction`
 * over the first `lrDecayFraction` of the run, then constant.
 */
export function scheduledLr(config: TrainRunConfig, step: number): number {
  const progress = Math.min(1, step / Math.max(1, lrFloorStep(config)));
  const floor = config.lrFinalFraction;
  return config.trainer.lr * (floor + ((1 - floor) * (1 + Math.cos(Math.PI * progress))) / 2);
}

/** Adam's β1 of step `step` (0-based): `momentumAtFloor` once the lr schedule has reached its floor, else the configured one (undefined). */
export function scheduledBeta1(config: TrainRunConfig, step: number): number | undefined {
  if (config.momentumAtFloor === null) return undefined;
  return step >= lrFloorStep(config) ? config.momentumAtFloor : undefined;
}

/** The (fractional) step at which the lr schedule reaches its floor. */
function lrFloorStep(config: TrainRunConfig): number {
  return (config.maxSteps - 1) * config.lrDecayFraction;
}

/** The reference-KL weight of step `step` (0-based): cosine from `refKlTauStart` to `trainer.refKlTau` over the first `refKlDecayFraction` of the run. */
export function scheduledRefKlTau(config: TrainRunConfig, step: number): number {
  const end = config.trainer.refKlTau;
  if (config.refKlTauStart === null) return end;
  const progress = Math.min(1, step / Math.max(1, (config.maxSteps - 1) * config.refKlDecayFraction));
  return end + ((config.refKlTauStart - end) * (1 + Math.cos(Math.PI * progress))) / 2;
}

function tableJson(table: KuhnPolicyTable): string {
  return `{\n${KUHN_INFO_SETS.map((k) => `  "${k}": [${table[k][0].toFixed(6)}, ${table[k][1].toFixed(6)}]`).join(',\n')}\n}`;
}

/** Reads `metrics.jsonl`. */
export async function readMetrics(out: string): Promise<StepMetrics[]> {
  const text = await readFile(join(out, 'metrics.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StepMetrics);
}
