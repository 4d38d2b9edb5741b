import { z } from 'zod';
import { seededRandom } from '../util/random.ts';

/** The faults the scripted model server can inject. */
export const FAULT_KINDS = ['500', '503', '429', 'reset', 'timeout', 'truncated', 'malformed', 'stream_cut'] as const;
/**
 * One of {@link FAULT_KINDS}: an HTTP 500 / 503 / 429 reply, a connection reset, a request never
 * answered (the client's timeout must end it), a truncated or malformed body, or a stream cut
 * mid-way.
 */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Random fault injection: a seeded fraction `rate` of requests fail with one of `kinds`. */
export const FaultOptionsSchema = z
  .object({
    /** Fraction of requests that fail, in [0, 1]. */
    rate: z.number().min(0).max(1),
    /** PRNG seed (the same seed injects the same faults into the same request sequence). */
    seed: z.number().int().default(1),
    kinds: z.array(z.enum(FAULT_KINDS)).min(1),
    /** `retry-after-ms` sent with 429 / 503 (default 10). */
    retryAfterMs: z.number().int().nonnegative().default(10),
  })
  .strict();
/** Fault injection settings as given (`retryAfterMs` optional, default 10 ms); see {@link FaultOptionsSchema}. */
export type FaultOptions = z.input<typeof FaultOptionsSchema>;

/** The core's seeded PRNG, re-exported for fault plans and crash loops. */
export { seededRandom };

/** Draws faults for a request sequence, deterministically from the seed. */
export class FaultPlan {
  private readonly random: () => number;
  readonly options: z.output<typeof FaultOptionsSchema>;

  constructor(options: FaultOptions) {
    this.options = FaultOptionsSchema.parse(options);
    this.random = seededRandom(this.options.seed);
  }

  /** The fault for the next request, or null. */
  next(): FaultKind | null {
    const roll = this.random();
    const pick = this.random();
    if (roll >= this.options.rate) return null;
    return this.options.kinds[Math.floor(pick * this.options.kinds.length)] ?? null;
  }
}
