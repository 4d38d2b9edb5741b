import { resolve } from 'node:path';
import { WireError } from '@troupe/verifiers';
import type { InferenceEndpoints, TransportConfig } from './config.ts';
import { encodePlannedMicroBatches } from './encode-planned.ts';
import { FilesystemRolloutSender } from './filesystem.ts';
import { type AdminRetry, InferenceAdmin } from './inference-admin.ts';
import { InferencePool } from './inference-pool.ts';
import type { WireSample } from './micro-batch.ts';
import { type BinCost, planBatch, plannedSequenceLengths } from './prepare-batch.ts';
import { sampleExportPath, writeSampleExport } from './sample-export.ts';
import { BroadcastWeightRelay } from './weight-relay.ts';
import { ZmqRolloutSender } from './zmq.ts';

/** What {@link RolloutLink.send} did with one step. */
export interface SentStep {
  step: number;
  microBatchesPerRank: number;
  /** Tokens sent, padding and fillers included. */
  tokens: number;
  /** Samples longer than `seqLen`, truncated. */
  truncatedSamples: number;
}

/**
 * The orchestrator's end of the rollout wire: packs a step's samples as prime-rl does and sends
 * every rank its micro batches, over files or ZMQ as the `[transport]` table says. With
 * `exportSamples` it first writes the step's samples as JSONL (`sampleExportPath`).
 */
export class RolloutLink {
  private constructor(
    readonly config: Exclude<TransportConfig, { type: 'in-process' }>,
    private readonly sender: {
      sendPayloads(options: { step: number; payloads: readonly Uint8Array[] }): Promise<unknown>;
      close(): Promise<void>;
    },
    private readonly cost: BinCost | undefined,
  ) {}

  static async open(options: { config: Exclude<TransportConfig, { type: 'in-process' }>; cost?: BinCost }): Promise<RolloutLink> {
    const { config } = options;
    const sender =
      config.type === 'filesystem'
        ? new FilesystemRolloutSender({ outputDir: config.outputDir, dataWorldSize: config.dataWorldSize })
        : await ZmqRolloutSender.open({ host: config.host, port: config.port, dataWorldSize: config.dataWorldSize });
    return new RolloutLink(config, sender, options.cost);
  }

  /**
   * Packs and sends the batch of trainer step `step` (1-indexed). An empty batch is refused:
   * prime-rl's trainer reads `micro_batches[0]` of every step (`src/prime_rl/trainer/rl/train.py:299`
   * at 559b447) and its orchestrator never sends one (`orchestrator/orchestrator.py:640-652`).
   */
  async send(options: { step: number; samples: readonly WireSample[] }): Promise<SentStep> {
    if (!Number.isInteger(options.step) || options.step < 1)
      throw new WireError(`step: prime-rl steps are 1-indexed, got ${options.step}`, { path: 'step' });
    if (options.samples.length === 0)
      throw new WireError(`samples: step ${options.step} is empty; prime-rl's trainer cannot train an empty step`, {
        path: 'samples',
      });
    const plan = planBatch({
      samples: options.samples,
      seqLen: this.config.seqLen,
      dataWorldSize: this.config.dataWorldSize,
      padToMultipleOf: this.config.padToMultipleOf,
      ...(this.cost ? { cost: this.cost } : {}),
    });
    // The export goes first, so whoever sees a step's rank files also finds its samples.
    if (this.config.exportSamples)
      await writeSampleExport({
        path: sampleExportPath({ outputDir: this.config.outputDir, step: options.step }),
        samples: options.samples,
        step: options.step,
      });
    await this.sender.sendPayloads({ step: options.step, payloads: plan.map(encodePlannedMicroBatches) });
    let tokens = 0;
    for (const rank of plan) for (const batch of rank) tokens += plannedSequenceLengths(batch).reduce((sum, n) => sum + n, 0);
    return {
      step: options.step,
      microBatchesPerRank: plan[0]?.length ?? 0,
      tokens,
      truncatedSamples: options.samples.filter((sample) => sample.tokenIds.length > this.config.seqLen).length,
    };
  }

  async close(): Promise<void> {
    await this.sender.close();
  }
}

/** The policy on external servers: routing, health, weight updates from the trainer's broadcasts. */
export interface ExternalPolicy {
  pool: InferencePool;
  admin: InferenceAdmin;
  relay: BroadcastWeightRelay;
  /** Stops the health checks. */
  close(): void;
}

/**
 * Wires an {@link InferencePool}, its {@link InferenceAdmin} and a {@link BroadcastWeightRelay} from
 * the run config. `outputDir` is made absolute here: the `weight_dir` sent to a server is resolved
 * by that server against its own working directory (vLLM runs from prime-rl's checkout).
 */
export function openExternalPolicy(options: {
  inference: InferenceEndpoints;
  outputDir: string;
  retry?: AdminRetry;
  fetch?: typeof fetch;
}): ExternalPolicy {
  const { inference } = options;
  const pool = new InferencePool({
    baseUrls: inference.baseUrls,
    model: inference.loraName ?? inference.model,
    startModel: inference.model,
    ...(inference.apiKey ? { apiKey: inference.apiKey } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const admin = new InferenceAdmin({
    baseUrls: inference.baseUrls,
    ...(inference.apiKey ? { headers: { authorization: `Bearer ${inference.apiKey}` } } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const relay = new BroadcastWeightRelay({
    outputDir: resolve(options.outputDir),
    admin,
    inference: pool,
    ...(inference.loraName ? { loraName: inference.loraName } : {}),
  });
  const stop = pool.startHealthChecks({ intervalMs: inference.healthIntervalSeconds * 1000 });
  return { pool, admin, relay, close: stop };
}
