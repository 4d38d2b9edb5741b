import type { Episode } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm, JsonValue } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { isTrainableTrace, traceReward } from './trainable-traces.ts';

/** Config of {@link Rae}. */
export const RaeConfigSchema = z.strictObject({
  type: z.literal('rae'),
  /** EMA decay of the per-(env, role) baseline, in [0, 1). SPIRAL's α. */
  decay: z.number().min(0).lt(1, { message: 'decay must be below 1 (1 would freeze the baseline at 0)' }).default(0.95),
});
export type RaeConfig = z.input<typeof RaeConfigSchema>;

/** Serialized state of {@link Rae}: the baselines by env id, then role. */
export const RaeStateSchema = z.strictObject({
  version: z.literal(1),
  decay: z.number(),
  baselines: z.record(z.string(), z.record(z.string(), z.number())),
});
export type RaeState = z.infer<typeof RaeStateSchema>;

/**
 * RAE, role-conditioned advantage estimation (SPIRAL, arXiv:2506.24119). One EMA baseline per
 * (env id, role), lazily 0. Trainable traces are processed in order (episodes in the given group
 * order, traces in completion order); each gets `A = r − b` against the baseline BEFORE the
 * update, then `b ← decay·b + (1 − decay)·r`. No normalisation. Works with any group size.
 * With one role it is REINFORCE with an EMA baseline. The baselines survive a restart through
 * `state()` / `loadState()`.
 */
export class Rae implements Algorithm {
  readonly type = 'rae';
  readonly decay: number;
  private readonly baselines = new Map<string, Map<string, number>>();

  constructor(config: RaeConfig = { type: 'rae' }) {
    this.decay = RaeConfigSchema.parse(config).decay;
  }

  scoreGroup(episodes: readonly Episode[]): void {
    const decay = this.decay;
    for (let e = 0; e < episodes.length; e++) {
      const episode = episodes[e]!;
      let baselines = this.baselines.get(episode.env.id);
      const traces = episode.traces;
      for (let t = 0; t < traces.length; t++) {
        const trace = traces[t]!;
        if (!isTrainableTrace(trace)) continue;
        if (baselines === undefined) {
          baselines = new Map();
          this.baselines.set(episode.env.id, baselines);
        }
        const role = trace.agent.name;
        const reward = traceReward(trace);
        const before = baselines.get(role) ?? 0;
        assignAdvantages(trace, reward - before);
        baselines.set(role, decay * before + (1 - decay) * reward);
      }
    }
  }

  /** Current baseline of a role in an env (0 before its first trace). */
  baseline(options: { env: string; role: string }): number {
    return this.baselines.get(options.env)?.get(options.role) ?? 0;
  }

  state(): JsonValue {
    const baselines: Record<string, Record<string, number>> = {};
    for (const [env, roles] of this.baselines) baselines[env] = Object.fromEntries(roles);
    const state: RaeState = { version: 1, decay: this.decay, baselines };
    return state;
  }

  loadState(state: unknown): void {
    const parsed = RaeStateSchema.safeParse(state);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new TypeError(`rae state: ${issue ? `${['state', ...issue.path].join('.')}: ${issue.message}` : 'invalid'}`);
    }
    this.baselines.clear();
    for (const [env, roles] of Object.entries(parsed.data.baselines)) {
      this.baselines.set(env, new Map(Object.entries(roles)));
    }
  }
}
