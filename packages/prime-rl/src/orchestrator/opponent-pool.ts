import { AsyncLocalStorage } from 'node:async_hooks';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '@troupe/verifiers';
import { ProviderError } from '@troupe/verifiers';
import { z } from 'zod';
import { Rng } from '../inference/rng.ts';
import type { EvaluationPolicy } from './types.ts';

/** `pool = { of = "main", keep = 8, every = 25, sample = "uniform" }`: a role played by past snapshots of a trainable policy. */
export const OpponentPoolConfigSchema = z
  .object({
    /** The trainable policy whose snapshots fill the pool (`main`, or a name under `[policies]`). */
    of: z.string().min(1),
    /** Snapshots held: the newest `keep` (the first is the initial weights, step 0). */
    keep: z.number().int().positive().default(8),
    /** A snapshot of the policy every `every` trainer steps. */
    every: z.number().int().positive().default(25),
    /**
     * How an episode draws its snapshot: `uniform` over the pool, or `recent` (the i-th oldest of
     * k snapshots with probability (i + 1) / (k(k + 1)/2): the newest is drawn k times as often as the oldest).
     */
    sample: z.enum(['uniform', 'recent']).default('uniform'),
  })
  .strict();
/** A pool binding as written. */
export type OpponentPoolConfigInput = z.input<typeof OpponentPoolConfigSchema>;
/** A pool binding with defaults filled in. */
export type OpponentPoolConfig = z.output<typeof OpponentPoolConfigSchema>;

/** One snapshot of the pool: the policy at trainer step `step`. */
export interface PoolSnapshot {
  step: number;
  policy: EvaluationPolicy;
}

/** The snapshot each pool plays in the episode running in this async context. */
const episodeDraws = new AsyncLocalStorage<ReadonlyMap<OpponentPool, PoolSnapshot>>();

/**
 * Runs `fn` (one episode) with each pool's drawn snapshot: every model call the episode makes
 * through a pool (directly or through a router), in this async context, goes to that snapshot.
 */
export function withPoolDraws<T>(draws: ReadonlyMap<OpponentPool, PoolSnapshot>, fn: () => T): T {
  return episodeDraws.run(draws, fn);
}

/**
 * A role's opponent pool: a model client whose calls go to the snapshot the orchestrator drew
 * for the episode making them. It holds no weights itself: the orchestrator takes the snapshots
 * (every `every` steps, the newest `keep`), draws one per episode from a seeded hash of (run
 * seed, rollout, group, episode, role), saves them in checkpoints and restores them on resume.
 * Register it in the source's {@link ModelRouter} under the role's model name, and list it in
 * the source's `pools` (the role must also be in `frozenRoles`: pool traces never train).
 */
export class OpponentPool implements ModelClient {
  readonly model: string;
  readonly config: OpponentPoolConfig;

  constructor(options: { name: string; config: OpponentPoolConfigInput }) {
    this.model = options.name;
    this.config = OpponentPoolConfigSchema.parse(options.config);
  }

  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    const snapshot = episodeDraws.getStore()?.get(this);
    if (!snapshot) {
      return Promise.reject(
        new ProviderError(
          `opponent pool ${this.model}: called outside an orchestrator rollout (no snapshot drawn for this episode)`,
        ),
      );
    }
    return snapshot.policy.client.complete({ ...request, model: `${this.model}@${snapshot.step}` }, options);
  }

  /** Index into a pool of `size` snapshots (oldest first) for a uniform draw `u` in [0, 1). */
  pick(size: number, u: number): number {
    if (this.config.sample === 'uniform') return Math.min(size - 1, Math.floor(u * size));
    // recent: weight i + 1 for the i-th oldest.
    let target = u * ((size * (size + 1)) / 2);
    for (let i = 0; i < size; i++) {
      target -= i + 1;
      if (target < 0) return i;
    }
    return size - 1;
  }
}

/** FNV-1a over the parts, then one mulberry32 step: a deterministic uniform in [0, 1). */
export function hashUniform(parts: readonly (string | number)[]): number {
  return new Rng(hashSeed(parts)).next();
}

/** A 32-bit seed from the parts (FNV-1a of their text). */
export function hashSeed(parts: readonly (string | number)[]): number {
  let h = 0x811c9dc5;
  const text = parts.join('\u241f');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
