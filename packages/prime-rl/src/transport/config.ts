import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';

/** The run config's `[transport]` table: how the orchestrator reaches the trainer. */
export const TransportConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({
    /** The embedded trainer in this process (the default, fastest). */
    type: z.literal('in-process'),
  }),
  z.strictObject({
    /** `<outputDir>/rollouts/step_<N>/rank_<r>.bin`, weights back through `broadcasts/step_<N>/STABLE`. */
    type: z.literal('filesystem'),
    outputDir: z.string().min(1),
    /** Data-parallel ranks of the trainer. */
    dataWorldSize: z.number().int().positive().default(1),
    /** The trainer's `model.seq_len`: samples are truncated to it. */
    seqLen: z.number().int().positive().default(2048),
    /** The trainer's context-parallel degree. */
    padToMultipleOf: z.number().int().positive().default(1),
    /** Also write each step's samples before packing to `<outputDir>/samples/step_<N>.jsonl` (sample-export.ts). */
    exportSamples: z.boolean().default(false),
  }),
  z.strictObject({
    /** PUB on `port`, READY on `port + 1`; weights still come back through `broadcasts/`. */
    type: z.literal('zmq'),
    outputDir: z.string().min(1),
    dataWorldSize: z.number().int().positive().default(1),
    seqLen: z.number().int().positive().default(2048),
    padToMultipleOf: z.number().int().positive().default(1),
    exportSamples: z.boolean().default(false),
    host: z.string().min(1).default('localhost'),
    port: z.number().int().min(1).max(65534).default(5555),
  }),
]);
/**
 * A parsed `[transport]` table (defaults applied): `in-process`, `filesystem` or `zmq`;
 * {@link parseTransportConfig} throws a `RangeError` naming the field otherwise.
 */
export type TransportConfig = z.output<typeof TransportConfigSchema>;

/** The run config's `[inference]` table: external OpenAI-compatible servers for the trained policy. */
export const InferenceEndpointsSchema = z.strictObject({
  /** Base URLs including `/v1`. */
  baseUrls: z.array(z.string().url()).min(1),
  /** Model name the servers serve. */
  model: z.string().min(1).default('policy'),
  /** API key the servers expect (default `EMPTY`). */
  apiKey: z.string().min(1).optional(),
  /** Seconds between `/liveness` checks (default 10). */
  healthIntervalSeconds: z.number().positive().default(10),
  /**
   * The policy is a LoRA adapter of `model` under this name (servers started with LoRA enabled):
   * each version is loaded with prime-rl's `POST /load_lora_adapter {lora_name, lora_path}` and
   * requests name the adapter as `model` (`src/prime_rl/orchestrator/orchestrator.py:361-363` at
   * 559b447). Several policies can then share one fleet, one adapter each.
   */
  loraName: z.string().min(1).max(256).optional(),
});
/**
 * A parsed `[inference]` table (defaults applied): the servers' base URLs, model name, API key and
 * the health-check interval in seconds.
 */
export type InferenceEndpoints = z.output<typeof InferenceEndpointsSchema>;

/** Parses a `[transport]` table; the error names the field, e.g. `transport.dataWorldSize: …`. */
export function parseTransportConfig(value: unknown): TransportConfig {
  const parsed = TransportConfigSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = `transport${issue?.path.length ? `.${issue.path.join('.')}` : ''}`;
  throw new ConfigError(`${path}: ${issue?.message}`, { path });
}
