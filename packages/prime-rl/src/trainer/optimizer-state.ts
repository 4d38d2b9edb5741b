import type { NamedWeight } from '../policy/config.ts';

// In its own module, free of tfjs: the orchestrator, transports and checkpoints name this type, and
// their declarations must not import tfjs (its types need DOM and do not pass tsc --strict).

/** AdamW moments and step count, as plain data (for checkpoints). */
export interface OptimizerState {
  step: number;
  m: NamedWeight[];
  v: NamedWeight[];
}
