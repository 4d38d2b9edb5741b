import { InferenceEndpointsSchema, TransportConfigSchema } from '@troupe/prime-rl/transport';
import { z } from 'zod';

/**
 * `[transport]`: where the orchestrator's batches go. `in-process` (the default) trains the
 * embedded trainer in this process; `filesystem` and `zmq` send each step as prime-rl's
 * `list[MicroBatch]` per rank to a trainer process (prime-rl's, or `pnpm trainer serve-trainer`)
 * and take its weights back from `<outputDir>/broadcasts/step_<N>/STABLE`.
 */
export const TransportSectionSchema = TransportConfigSchema.default({ type: 'in-process' });
export type TransportSection = z.output<typeof TransportSectionSchema>;

/**
 * `[inference]`: the trained policy on OpenAI-compatible servers (vLLM, or `pnpm trainer
 * serve-inference`), updated from the trainer's broadcasts with `/pause` → `/update_weights` →
 * `/resume`. Absent: the embedded onnxruntime policy in this process samples the rollouts.
 */
export const InferenceSectionSchema = InferenceEndpointsSchema.extend({
  /** Seconds to wait at start for every server's `/liveness` and the trainer's first broadcast. */
  startTimeoutSeconds: z.number().positive().default(600),
}).optional();
export type InferenceSection = z.output<typeof InferenceSectionSchema>;

/** The two sections and `policy.engine` as a run config sees them, checked together: the field at fault and why. */
export function checkTransportSections(config: {
  transport: TransportSection;
  inference?: InferenceSection;
  policy?: { engine: 'embedded' | 'external' };
}): { path: string[]; message: string } | null {
  if (config.policy?.engine === 'external') {
    if (config.transport.type === 'in-process')
      return {
        path: ['transport', 'type'],
        message:
          'policy.engine = "external" trains with an external trainer process (prime-rl\'s); set transport.type = "filesystem" or "zmq"',
      };
    if (!config.inference)
      return {
        path: ['inference', 'baseUrls'],
        message: 'policy.engine = "external" samples from inference servers (vLLM); give [inference] base_urls',
      };
  }
  if (config.inference && config.transport.type === 'in-process')
    return {
      path: ['inference'],
      message: 'external inference servers take weights from a trainer process; set transport.type = "filesystem" or "zmq"',
    };
  return null;
}
