import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Inference, Trainer, TrainerSchedule, WeightsHandle } from '@troupe/prime-rl/orchestrator';
import type { NamedWeight, PolicyConfig, WordTokenizer } from '@troupe/prime-rl/policy';
import type { OptimizerState } from '@troupe/prime-rl/trainer';
import {
  broadcastStepDir,
  checkExternalResume,
  clearRunDir,
  openExternalPolicy,
  ResumeStepMismatchError,
  RolloutLink,
  readBroadcast,
  stableBroadcastSteps,
  toWireSample,
  trainerCheckpointSteps,
  type WireSample,
  waitForFile,
  writeRunModel,
} from '@troupe/prime-rl/transport';
import { ConfigError, TimeoutError, TrainerError, WireError } from '@troupe/verifiers';
import type { InferenceSection, TransportSection } from './transport-config.ts';

type WireTransport = Exclude<TransportSection, { type: 'in-process' }>;

/** Waits for `broadcasts/step_<step>/STABLE` of run `runId` (a broadcast of an older run is ignored). */
async function waitForBroadcast(options: { outputDir: string; step: number; runId: string; timeoutMs: number }) {
  const dir = broadcastStepDir(options);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    await waitForFile({ path: join(dir, 'STABLE'), timeoutMs: Math.max(0, deadline - Date.now()), pollMs: 20 });
    if (!existsSync(join(dir, 'meta.json')) && existsSync(join(dir, 'STABLE')))
      throw new WireError(
        `${dir}: STABLE but no meta.json — not the embedded engines' weight format (a Hugging Face checkpoint from prime-rl's own trainer?); with prime-rl's trainer and vLLM set policy.engine = "external" (docs/scale-out.md)`,
      );
    try {
      const broadcast = await readBroadcast({ dir });
      if (broadcast.state.runId === options.runId) return broadcast;
    } catch {}
    if (Date.now() >= deadline) throw new TimeoutError(`${dir}: no broadcast of this run within ${options.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The trainer process as the orchestrator's {@link Trainer}. */
export type WireTrainer<W = NamedWeight[], O = OptimizerState> = Trainer<W, O>;

/**
 * The trainer process seen as the orchestrator's {@link Trainer}, over prime-rl's wire: `step`
 * packs the batch as prime-rl's `prepare_batch` and sends it (`rollouts/step_<N>/rank_<r>.bin` or
 * ZMQ), then waits for `broadcasts/step_<N>/STABLE` and returns the weights found there. The
 * orchestrator never sends an empty step (prime-rl's trainer cannot train one), so every step
 * number reaches the trainer, in order, one send at a time.
 */
export async function wireTrainer(options: {
  transport: WireTransport;
  tokenizer: WordTokenizer;
  policy: PolicyConfig;
  trainer: Record<string, unknown>;
  schedule: TrainerSchedule;
  /** Sampling temperature of every token (the trainer divides its logits by it). */
  temperature: number;
  startTimeoutMs: number;
  log?: (line: string) => void;
}): Promise<WireTrainer> {
  const { transport } = options;
  const outputDir = transport.outputDir;
  const runId = randomUUID();
  await clearRunDir({ outputDir });
  await writeRunModel({
    outputDir,
    model: {
      runId,
      tokenizer: options.tokenizer.toJSON(),
      policy: options.policy,
      trainer: options.trainer,
      schedule: options.schedule as unknown as Record<string, unknown>,
    },
  });
  options.log?.(`transport: ${transport.type}; waiting for the trainer's first broadcast in ${outputDir}/broadcasts/step_0`);
  const link = await RolloutLink.open({ config: transport });
  let latest = await waitForBroadcast({ outputDir, step: 0, runId, timeoutMs: options.startTimeoutMs });
  const sender = orderedSender(link);
  const where = transport.type === 'zmq' ? `zmq tcp://${transport.host}:${transport.port}` : `files in ${outputDir}`;
  return {
    description: `trainer process over prime-rl's wire (${where}, ${transport.dataWorldSize} rank${transport.dataWorldSize > 1 ? 's' : ''})`,
    async step({ samples, step }) {
      await sender.send(
        step,
        samples.map((sample) => toWireSample(sample, { temperatures: options.temperature })),
      );
      latest = await waitForBroadcast({ outputDir, step, runId, timeoutMs: Number.POSITIVE_INFINITY });
      const metrics = (latest.state.metrics ?? {}) as Record<string, number>;
      return { weights: latest.weights, metrics };
    },
    async state() {
      return { weights: latest.weights, optimizer: latest.optimizer };
    },
    close: () => link.close(),
  };
}

/**
 * The policy on OpenAI-compatible servers as the orchestrator's {@link Inference}: rollouts call
 * the {@link InferencePool} (least outstanding, `/liveness`, token ids and logprobs, `cache_salt`
 * = the policy version); `updateWeights(version)` pushes `broadcasts/step_<version>` to every
 * server (`/pause` → `/update_weights` → `/resume`, prime-rl's retries). Evaluation runs the same
 * weights on `local` (an embedded policy in this process), which can read exact reply
 * probabilities.
 */
export async function wireInference(options: {
  inference: NonNullable<InferenceSection>;
  outputDir: string;
  local: Inference;
  log?: (line: string) => void;
}): Promise<Inference> {
  const external = openExternalPolicy({ inference: options.inference, outputDir: options.outputDir });
  const timeoutMs = options.inference.startTimeoutSeconds * 1000;
  await external.pool.waitUntilLive({ timeoutMs });
  // The servers may hold another run's weights: give them this run's initial broadcast first.
  const weightDir = broadcastStepDir({ outputDir: resolve(options.outputDir), step: 0 });
  const { loraName } = options.inference;
  if (loraName) await external.admin.loadLoraAdapter({ loraName, loraPath: weightDir });
  else await external.admin.updateWeights({ weightDir });
  options.log?.(`inference: ${options.inference.baseUrls.join(', ')} (step 0 weights loaded)`);
  const { local } = options;
  return {
    client: external.pool,
    get version() {
      return external.relay.version;
    },
    async updateWeights({ version }) {
      await external.relay.advanceTo({ step: version });
    },
    evaluationPolicy: (evaluation) => local.evaluationPolicy(evaluation),
    // The servers sample with their own RNG (seeded at their start).
    rngState: () => null,
    loadRngState() {},
    async close() {
      external.close();
    },
  };
}

/** Sends steps over the rollout link one at a time, in step order from `start + 1`; a step out of order is refused (no step is ever skipped). */
function orderedSender(link: RolloutLink, start = 0) {
  let sent = start;
  // One send at a time, in step order (ZMQ frames are read in the order they are sent).
  let queue: Promise<unknown> = Promise.resolve();
  return {
    async send(step: number, samples: WireSample[]) {
      if (step !== sent + 1)
        throw new TrainerError(`step: the trainer process expects step ${sent + 1} next, not ${step} (no step is skipped)`, {
          step,
        });
      sent = step;
      const next = queue.then(() => link.send({ step, samples }));
      queue = next.catch(() => undefined);
      await next;
    },
  };
}

/**
 * Waits for `broadcasts/step_<step>/STABLE`. A stable broadcast of a later step is a trainer that
 * is not on the orchestrator's step numbering (it can only broadcast step N after reading the
 * rank files of step N): a {@link ResumeStepMismatchError} naming both steps.
 */
async function waitForStep(options: { outputDir: string; step: number; timeoutMs: number; resumedFrom: number | null }) {
  const { outputDir, step } = options;
  const deadline = Date.now() + options.timeoutMs;
  for (let polls = 0; ; polls++) {
    try {
      await waitForFile({ path: join(broadcastStepDir({ outputDir, step }), 'STABLE'), timeoutMs: 0 });
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
    if (polls % 10 === 0) {
      const ahead = (await stableBroadcastSteps({ outputDir })).filter((s) => s > step).at(-1);
      if (ahead !== undefined)
        throw new ResumeStepMismatchError({
          orchestratorStep: step,
          trainerStep: ahead,
          found: `${broadcastStepDir({ outputDir, step: ahead })} is stable while step ${step} is awaited`,
          hint:
            options.resumedFrom === null
              ? 'the trainer was started with --resume (start it fresh, or resume troupe with --resume)'
              : `start the trainer with --resume.step ${options.resumedFrom} (launch.sh --resume does)`,
        });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Engines whose weights the orchestrator never reads (`policy.engine = "external"`): prime-rl's own
 * FSDP trainer, or anything that reads `rollouts/step_<N>/rank_<r>.bin` and writes
 * `broadcasts/step_<N>/` + `STABLE` in its own format, and vLLM servers that load that directory.
 * A policy version is a {@link WeightsHandle}: the trainer's `step` waits for `STABLE` and returns
 * the directory, which `updateWeights` hands to every server as `weight_dir` (`/pause` →
 * `/update_weights` → `/resume`). Version 0 is the model the servers were started with. Token
 * ids and logprobs come from the servers' replies; there is no tokenizer here. Evaluation runs on
 * the servers at the version they hold (no reply probabilities: evaluators needing them are
 * skipped).
 */
export async function externalEngines(options: {
  transport: WireTransport;
  inference: NonNullable<InferenceSection>;
  /** Sampling temperature of every token (the trainer divides its logits by it). */
  temperature: number;
  /**
   * Resume after the orchestrator's checkpoint of this step: the trainer must hold its own
   * checkpoint of the step and be started with `--resume.step <step>` (see `checkExternalResume`);
   * the servers are given `broadcasts/step_<step>` before the first step is played.
   */
  resumeStep?: number;
  log?: (line: string) => void;
}): Promise<{ trainer: WireTrainer<WeightsHandle, null>; inference: Inference<WeightsHandle> }> {
  const { transport } = options;
  const outputDir = transport.outputDir;
  const start = options.resumeStep ?? 0;
  if (options.resumeStep !== undefined) {
    // Refused before anything is removed; then the rollouts past the step (ours) are cleared.
    await checkExternalResume({ outputDir, step: start });
  } else {
    // The rollouts are ours to clear; the broadcasts are the trainer's, which may already be running.
    await rm(join(outputDir, 'rollouts'), { recursive: true, force: true });
    await rm(join(outputDir, 'samples'), { recursive: true, force: true });
    const stale = (await readdir(join(outputDir, 'broadcasts')).catch(() => [] as string[]))
      .map((name) => /^step_(\d+)$/.exec(name)?.[1])
      .filter((step): step is string => step !== undefined && Number(step) > 0);
    if (stale.length)
      throw new ConfigError(
        `transport.output_dir: ${outputDir}/broadcasts holds step_${stale.sort((a, b) => Number(a) - Number(b))[0]} of an earlier run; give a fresh output_dir (or delete its broadcasts/) and restart the trainer (or run with --resume)`,
      );
  }
  const external = openExternalPolicy({ inference: options.inference, outputDir });
  const link = await RolloutLink.open({ config: transport });
  const handle = (step: number): WeightsHandle => ({ step, dir: broadcastStepDir({ outputDir, step }) });
  let latest = handle(start);
  const sender = orderedSender(link, start);
  const resumedFrom = options.resumeStep ?? null;
  try {
    await external.pool.waitUntilLive({ timeoutMs: options.inference.startTimeoutSeconds * 1000 });
    if (resumedFrom !== null) {
      // As prime-rl's orchestrator on resume (`orchestrator/orchestrator.py:331-376` at 559b447): wait
      // for the trainer's start-up broadcast of the resumed step, load it into every server.
      options.log?.(`--resume: step ${start}; waiting for ${broadcastStepDir({ outputDir, step: start })}/STABLE`);
      await waitForStep({ outputDir, step: start, timeoutMs: options.inference.startTimeoutSeconds * 1000, resumedFrom });
      await external.relay.advanceTo({ step: start });
    } else if (options.inference.loraName) {
      // A LoRA policy has no weights on the servers until its adapter is loaded: as prime-rl's
      // orchestrator does at start (`orchestrator/orchestrator.py:333-363` at 559b447), wait for the
      // trainer's start-up broadcast (step 0) and load it under the adapter's name.
      const timeoutMs = options.inference.startTimeoutSeconds * 1000;
      await waitForStep({ outputDir, step: 0, timeoutMs, resumedFrom });
      await external.admin.loadLoraAdapter({
        loraName: options.inference.loraName,
        loraPath: broadcastStepDir({ outputDir, step: 0 }),
      });
    }
  } catch (error) {
    external.close();
    await link.close();
    throw error;
  }
  const where = transport.type === 'zmq' ? `zmq tcp://${transport.host}:${transport.port}` : `files in ${outputDir}`;
  options.log?.(
    `policy.engine external: rollouts to ${where}; weights: broadcasts/step_<N>/ (read by the servers only); inference: ${options.inference.baseUrls.join(', ')}`,
  );
  const trainer: WireTrainer<WeightsHandle, null> = {
    description: `external trainer over prime-rl's wire (${where}, ${transport.dataWorldSize} rank${transport.dataWorldSize > 1 ? 's' : ''}; weights not read)`,
    async step({ samples, step }) {
      await sender.send(
        step,
        samples.map((sample) => toWireSample(sample, { temperatures: options.temperature })),
      );
      latest = handle(step);
      await waitForStep({ outputDir, step, timeoutMs: Number.POSITIVE_INFINITY, resumedFrom });
      return { weights: latest, metrics: {} };
    },
    async state() {
      return { weights: latest, optimizer: null };
    },
    close: () => link.close(),
  };
  const inference: Inference<WeightsHandle> = {
    client: external.pool,
    // The orchestrator's version (its step clock); with several policies a policy's trainer steps
    // (its broadcasts) lag it when a step had no samples for it.
    get version() {
      return external.pool.version;
    },
    async updateWeights({ weights, version }) {
      await external.relay.advanceTo({ step: weights.step });
      external.pool.setVersion(version);
    },
    async evaluationPolicy() {
      return { version: external.pool.version, client: external.pool };
    },
    // The servers sample with their own RNG.
    rngState: () => null,
    loadRngState() {},
    async close() {
      external.close();
    },
  };
  return { trainer, inference };
}

/**
 * A policy of a run of several that resumes behind the run (a step without its samples did not
 * train it): its trainer must hold a checkpoint of the policy's own step. It checkpoints every
 * `checkpoint_every` steps of its own, so with an interval above 1 it may hold none: refused with a
 * {@link ResumeStepMismatchError} that says so, before anything is removed or awaited.
 */
export async function checkLaggingResume(
  policy: string,
  options: { outputDir: string; policyStep: number; runStep: number; checkpointEvery: number },
): Promise<void> {
  const { policyStep, runStep } = options;
  if (policyStep >= runStep) return;
  const steps = await trainerCheckpointSteps({ checkpointDir: options.outputDir });
  if (steps.includes(policyStep)) return;
  throw new ResumeStepMismatchError({
    orchestratorStep: policyStep,
    trainerStep: steps.at(-1) ?? null,
    found: `policy ${policy} lags the run: its step ${policyStep} at the run's step ${runStep}, and ${join(options.outputDir, 'checkpoints')} holds ${steps.length ? `steps ${steps.join(', ')}` : 'none'}`,
    hint: `its trainer checkpoints every checkpoint_every (${options.checkpointEvery}) steps of its own, so this checkpoint cannot be resumed; a run whose policies may skip a step (no samples for them) resumes only with checkpoint_every = 1`,
  });
}
