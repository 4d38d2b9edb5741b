import { join } from 'node:path';
import { broadcastStepDir, stableBroadcastSteps, waitForFile } from './filesystem.ts';
import type { InferenceAdmin } from './inference-admin.ts';

/** Something that serves a policy version and is told when it changes (e.g. an {@link InferencePool}). */
export interface VersionedInference {
  readonly version: number;
  setVersion(version: number): void;
}

/** Options of {@link BroadcastWeightRelay}. */
export interface BroadcastWeightRelayOptions {
  outputDir: string;
  admin: InferenceAdmin;
  /** Told the new policy version once every server has the weights (its `cache_salt` changes with it). */
  inference?: VersionedInference;
  /** Version served at start (default 0: the trainer's initial broadcast). */
  version?: number;
  /** Poll interval of `STABLE` (default 100 ms). */
  pollMs?: number;
  /**
   * The policy is this LoRA adapter: each broadcast is loaded with `/load_lora_adapter` under this
   * name ({@link InferenceAdmin.loadLoraAdapter}) instead of `/update_weights`.
   */
  loraName?: string;
}

/**
 * prime-rl's filesystem weight path, orchestrator side: waits for
 * `<outputDir>/broadcasts/step_<N>/STABLE` (written last by the trainer after step N), then
 * updates every inference server with `weight_dir = broadcasts/step_<N>` and advances the policy
 * version to N. The batch for trainer step N+1 is then sampled by policy vN.
 */
export class BroadcastWeightRelay {
  private current: number;

  constructor(private readonly options: BroadcastWeightRelayOptions) {
    this.current = options.version ?? 0;
  }

  /** Policy version the inference servers hold. */
  get version(): number {
    return this.current;
  }

  /** Newest step with a `STABLE` broadcast, or null. */
  async latestStable(): Promise<number | null> {
    const steps = await stableBroadcastSteps({ outputDir: this.options.outputDir });
    return steps.at(-1) ?? null;
  }

  /**
   * Waits until the broadcast of `step` is stable, then pushes it (a no-op when the servers
   * already hold `step` or newer). Returns the weight directory pushed.
   */
  async advanceTo(options: { step: number; timeoutMs?: number; signal?: AbortSignal }): Promise<string> {
    const weightDir = broadcastStepDir({ outputDir: this.options.outputDir, step: options.step });
    if (options.step <= this.current) return weightDir;
    await waitForFile({
      path: join(weightDir, 'STABLE'),
      timeoutMs: options.timeoutMs ?? Number.POSITIVE_INFINITY,
      pollMs: this.options.pollMs ?? 100,
      signal: options.signal,
    });
    if (this.options.loraName !== undefined)
      await this.options.admin.loadLoraAdapter({ loraName: this.options.loraName, loraPath: weightDir });
    else await this.options.admin.updateWeights({ weightDir });
    this.current = options.step;
    this.options.inference?.setVersion(options.step);
    return weightDir;
  }

  /** Pushes the newest stable broadcast if it is newer than what the servers hold; returns the version. */
  async catchUp(): Promise<number> {
    const latest = await this.latestStable();
    if (latest !== null && latest > this.current) await this.advanceTo({ step: latest });
    return this.current;
  }
}
