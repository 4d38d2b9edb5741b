import type { Episode } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm, JsonValue } from './algorithm.ts';
import { assignScalarAdvantage } from './scalar-advantage.ts';
import { isTrainableTrace, traceReward } from './trainable-traces.ts';

/** Config of {@link Rae}. */
export const RaeConfigSchema = z.strictObject({
  type: z.literal('rae'),
  /** EMA decay of the per-(env, role) baseline, in [0, 1). SPIRAL's α. */
  decay: z.number().min(0).lt(1, { message: 'decay must be below 1 (1 would freeze the baseline at 0)' }).default(0.95),
  /**
   * A dotted path into each trace (e.g. `info.seat.card`, `metrics.difficulty`): one baseline per
   * (env, role, value at that path) instead of per (env, role). Off when absent.
   */
  key: z
    .string()
    .regex(/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/, { message: 'key must be a dotted path such as info.seat.card' })
    .optional(),
});
/**
 * The config `new Rae(config)` accepts: `type: 'rae'`, the EMA `decay` in [0, 1) (default 0.95) and
 * an optional `key` path that splits the baselines; parsed with {@link RaeConfigSchema}.
 */
export type RaeConfig = z.input<typeof RaeConfigSchema>;

/** Serialized state of {@link Rae}: the baselines by env id, then role. */
export const RaeStateSchema = z.strictObject({
  /** Format version of the state. */
  version: z.literal(1),
  /** The EMA decay the baselines were computed with. */
  decay: z.number(),
  /** The `key` path the baselines are split by; their names are then `<role>|<value>`. */
  key: z.string().optional(),
  /** The EMA baseline of the reward (reward units) by env id, then role (or `<role>|<value>` with `key`). */
  baselines: z.record(z.string(), z.record(z.string(), z.number())),
});
/**
 * What `Rae.state()` returns and `Rae.loadState` takes (saved in checkpoints): format version 1, the
 * decay, the split key, and the EMA baselines (reward units) by env id, then role.
 */
export type RaeState = z.infer<typeof RaeStateSchema>;

/**
 * RAE, role-conditioned advantage estimation (SPIRAL, arXiv:2506.24119). One EMA baseline per
 * (env id, role), lazily 0. Trainable traces are processed in order (episodes in the given group
 * order, traces in completion order); each gets `A = r − b` against the baseline BEFORE the
 * update, then `b ← decay·b + (1 − decay)·r`. No normalisation. Works with any group size.
 * With one role it is REINFORCE with an EMA baseline. The baselines survive a restart through
 * `state()` / `loadState()`.
 *
 * With `key` (a dotted path into the trace, e.g. `info.seat.card`) the baseline is kept per
 * (env, role, value at the path): a state-conditioned baseline, e.g. per (seat, own card) in a card
 * game, which in zero-sum self-play is not 0 (pooled GRPO's group mean there is) and removes
 * the variance the private card adds. A trace with nothing at the path is an error naming it.
 */
export class Rae implements Algorithm {
  readonly type = 'rae';
  /** A stale episode is dropped on its own; the others keep their advantages (per-trace baselines, nothing to rescore). */
  readonly staleEpisodes = 'keep';
  readonly decay: number;
  readonly key: string | undefined;
  private readonly path: readonly string[];
  /** Baselines by env id, then name: each a mutable cell (updating it allocates nothing). */
  private readonly baselines = new Map<string, Map<string, { value: number }>>();

  constructor(config: RaeConfig = { type: 'rae' }) {
    const parsed = RaeConfigSchema.parse(config);
    this.decay = parsed.decay;
    this.key = parsed.key;
    this.path = parsed.key?.split('.') ?? [];
  }

  /** The baseline's name for a trace: its role, or `<role>|<value at key>`. */
  private baselineName(trace: Episode['traces'][number]): string {
    const role = trace.agent.name;
    if (this.key === undefined) return role;
    let value: unknown = trace;
    for (const part of this.path) value = value !== null && typeof value === 'object' ? (value as never)[part] : undefined;
    if (value === undefined || value === null || typeof value === 'object')
      throw new ConfigError(
        `rae.key: the ${role} trace has no scalar at ${this.key} (got ${JSON.stringify(value) ?? 'undefined'})`,
        { path: 'key' },
      );
    return `${role}|${String(value)}`;
  }

  scoreGroup(episodes: readonly Episode[]): void {
    const decay = this.decay;
    // The last env's baselines and the last two names' cells: a group is one env and a few roles,
    // so most traces skip both Map lookups (the cells are the same ones the Maps hold).
    let env: string | undefined;
    let baselines: Map<string, { value: number }> | undefined;
    let name0: string | undefined;
    let cell0: { value: number } | undefined;
    let name1: string | undefined;
    let cell1: { value: number } | undefined;
    for (let e = 0; e < episodes.length; e++) {
      const episode = episodes[e]!;
      const traces = episode.traces;
      for (let t = 0; t < traces.length; t++) {
        const trace = traces[t]!;
        if (!isTrainableTrace(trace)) continue;
        if (baselines === undefined || episode.env.id !== env) {
          env = episode.env.id;
          baselines = this.baselinesOf(env);
          name0 = name1 = undefined;
        }
        const name = this.baselineName(trace);
        let baseline: { value: number };
        if (name === name0) baseline = cell0!;
        else if (name === name1) baseline = cell1!;
        else {
          baseline = this.cellOf(baselines, name);
          name1 = name0;
          cell1 = cell0;
          name0 = name;
          cell0 = baseline;
        }
        const reward = traceReward(trace);
        const before = baseline.value;
        assignScalarAdvantage(trace, reward - before);
        baseline.value = decay * before + (1 - decay) * reward;
      }
    }
  }

  /** The baselines of an env, created empty on its first trainable trace. */
  private baselinesOf(env: string): Map<string, { value: number }> {
    let baselines = this.baselines.get(env);
    if (baselines === undefined) {
      baselines = new Map();
      this.baselines.set(env, baselines);
    }
    return baselines;
  }

  /** The baseline cell of a name, created at 0. */
  private cellOf(baselines: Map<string, { value: number }>, name: string): { value: number } {
    let baseline = baselines.get(name);
    if (baseline === undefined) {
      baseline = { value: 0 };
      baselines.set(name, baseline);
    }
    return baseline;
  }

  /** Current baseline of a role in an env (0 before its first trace); with `key`, of the role at that key's `value`. */
  baseline(options: { env: string; role: string; value?: string | number | boolean }): number {
    const name = options.value === undefined ? options.role : `${options.role}|${String(options.value)}`;
    return this.baselines.get(options.env)?.get(name)?.value ?? 0;
  }

  state(): JsonValue {
    const baselines: Record<string, Record<string, number>> = {};
    for (const [env, roles] of this.baselines) {
      baselines[env] = Object.fromEntries([...roles].map(([name, baseline]) => [name, baseline.value]));
    }
    const state: RaeState = { version: 1, decay: this.decay, ...(this.key !== undefined ? { key: this.key } : {}), baselines };
    return state;
  }

  loadState(state: unknown): void {
    const parsed = RaeStateSchema.safeParse(state);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`rae state: ${issue ? `${['state', ...issue.path].join('.')}: ${issue.message}` : 'invalid'}`);
    }
    if ((parsed.data.key ?? null) !== (this.key ?? null))
      throw new ConfigError(
        `rae state: state.key: the state was saved with key ${parsed.data.key ?? '(none)'}, this algorithm has ${this.key ?? '(none)'}`,
      );
    this.baselines.clear();
    for (const [env, roles] of Object.entries(parsed.data.baselines)) {
      this.baselines.set(env, new Map(Object.entries(roles).map(([name, value]) => [name, { value }])));
    }
  }
}
