import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Inference, Trainer, TrainerSchedule } from '@troupe/prime-rl/orchestrator';
import type { PolicyConfig, WordTokenizer } from '@troupe/prime-rl/policy';
import {
  broadcastStepDir,
  clearRunDir,
  openExternalPolicy,
  RolloutLink,
  readBroadcast,
  toWireSample,
  type WireSample,
  waitForFile,
  writeRunModel,
} from '@troupe/prime-rl/transport';
import type { InferenceSection, TransportSection } from './transport-config.ts';

type WireTransport = Exclude<TransportSection, { type: 'in-process' }>;

/** Waits for `broadcasts/step_<step>/STABLE` of run `runId` (a broadcast of an older run is ignored). */
async function waitForBroadcast(options: { outputDir: string; step: number; runId: string; timeoutMs: number }) {
  const dir = broadcastStepDir(options);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    await waitForFile({ path: join(dir, 'STABLE'), timeoutMs: Math.max(0, deadline - Date.now()), pollMs: 20 });
    if (!existsSync(join(dir, 'meta.json')) && existsSync(join(dir, 'STABLE')))
      throw new Error(
        `${dir}: STABLE but no meta.json — not the embedded engines' weight format (a Hugging Face checkpoint from prime-rl's own trainer?); pnpm trainer train reads weights back from pnpm trainer serve-trainer only (docs/scale-out.md)`,
      );
    try {
      const broadcast = await readBroadcast({ dir });
      if (broadcast.state.runId === options.runId) return broadcast;
    } catch {}
    if (Date.now() >= deadline) throw new Error(`${dir}: no broadcast of this run within ${options.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The trainer process as the orchestrator's {@link Trainer}, plus what the wire inference needs of it. */
export interface WireTrainer extends Trainer {
  /**
   * Sends every step up to `step` not sent yet as an empty `list[MicroBatch]` (steps the
   * orchestrator skipped: an empty batch), so the trainer process trains them (a no-op) and
   * broadcasts `broadcasts/step_<N>/`, which the inference servers are then updated from.
   */
  sendSkippedThrough(step: number): Promise<void>;
}

/**
 * The trainer process seen as the orchestrator's {@link Trainer}, over prime-rl's wire: `step`
 * packs the batch as prime-rl's `prepare_batch` and sends it (`rollouts/step_<N>/rank_<r>.bin` or
 * ZMQ), then waits for `broadcasts/step_<N>/STABLE` and returns the weights found there. A step
 * the orchestrator skipped (an empty batch) is sent as an empty `list[MicroBatch]` — before the
 * next trained step, or as soon as the inference servers need its broadcast — so the trainer's
 * step numbers stay the orchestrator's. Sends go out one at a time, in step order.
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
  let sent = 0;
  // One send at a time, in step order (ZMQ frames are read in the order they are sent).
  let queue: Promise<unknown> = Promise.resolve();
  const sendInOrder = (step: number, samples: WireSample[]) => {
    const next = queue.then(() => link.send({ step, samples }));
    queue = next.catch(() => undefined);
    return next;
  };
  const sendSkippedThrough = async (step: number) => {
    while (sent < step) await sendInOrder(++sent, []);
  };
  const where = transport.type === 'zmq' ? `zmq tcp://${transport.host}:${transport.port}` : `files in ${outputDir}`;
  return {
    description: `trainer process over prime-rl's wire (${where}, ${transport.dataWorldSize} rank${transport.dataWorldSize > 1 ? 's' : ''})`,
    sendSkippedThrough,
    async step({ samples, step }) {
      await sendSkippedThrough(step - 1);
      const wire = samples.map((sample) => toWireSample(sample, { temperatures: options.temperature }));
      sent = step;
      await sendInOrder(step, wire);
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
  /** The trainer process: a version the orchestrator skipped (empty batch) is sent to it before the servers wait for its broadcast. */
  trainer?: Pick<WireTrainer, 'sendSkippedThrough'>;
  log?: (line: string) => void;
}): Promise<Inference> {
  const external = openExternalPolicy({ inference: options.inference, outputDir: options.outputDir });
  const timeoutMs = options.inference.startTimeoutSeconds * 1000;
  await external.pool.waitUntilLive({ timeoutMs });
  // The servers may hold another run's weights: give them this run's initial broadcast first.
  await external.admin.updateWeights({ weightDir: broadcastStepDir({ outputDir: options.outputDir, step: 0 }) });
  options.log?.(`inference: ${options.inference.baseUrls.join(', ')} (step 0 weights loaded)`);
  const { local } = options;
  return {
    client: external.pool,
    get version() {
      return external.relay.version;
    },
    async updateWeights({ version }) {
      // Without this, a skipped step's broadcast never comes: the trainer would only hear of it
      // with the next trained step, whose rollout waits for these very weights.
      await options.trainer?.sendSkippedThrough(version);
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
