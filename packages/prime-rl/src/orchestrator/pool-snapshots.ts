import { ConfigError, TrainerError } from '@troupe/verifiers';
import { hashSeed, hashUniform, type OpponentPool, type PoolSnapshot } from './opponent-pool.ts';
import type { Inference, TrainSource } from './types.ts';

/** One pool's running state: its source and role, the policy it snapshots, and the snapshots it holds (oldest first). */
export interface PoolState<W> {
  source: string;
  role: string;
  /** The trainable policy whose snapshots fill it. */
  of: string;
  pool: OpponentPool;
  snapshots: (PoolSnapshot & { weights: W })[];
}

/** One rollout's opponent draws: each pool's view at its policy `version`, and the age of every snapshot drawn. */
export interface PoolDraw<W> {
  views: Map<PoolState<W>, PoolSnapshot[]>;
  ages: Map<PoolState<W>, number[]>;
  version: number;
  step: number;
}

/**
 * The opponent pools of a run's sources: the policy snapshots each holds (one every `every`
 * trainer steps; a rollout at policy version v draws from the newest `keep` taken at or before
 * v), restored from a checkpoint, and each episode's draws — seeded by source, role, step, group
 * and episode, so a resumed run draws the same.
 */
export class PoolSnapshots<W> {
  /** Every pool, in source order then the source's pool order. */
  readonly states: PoolState<W>[];
  private readonly inferenceOf: (policy: string) => Inference<W>;
  private readonly seed: number;

  constructor(options: { sources: readonly TrainSource[]; inferenceOf: (policy: string) => Inference<W>; seed: number }) {
    this.inferenceOf = options.inferenceOf;
    this.seed = options.seed;
    this.states = options.sources.flatMap((source) =>
      (source.pools ?? []).map(({ role, pool }) => {
        if (!source.frozenRoles.has(role))
          throw new ConfigError(`sources: ${source.name}.${role} plays an opponent pool, so it must be one of its frozenRoles`, {
            path: 'sources.frozenRoles',
          });
        return { source: source.name, role, of: pool.config.of, snapshots: [], pool };
      }),
    );
  }

  /** Adds a snapshot of its policy at step `step` (`weights`, by policy) to every pool due one (every pool when `force`). */
  async take(step: number, weights: ReadonlyMap<string, W>, force = false): Promise<void> {
    for (const state of this.states) {
      if (!force && step % state.pool.config.every !== 0) continue;
      if (state.snapshots.some((s) => s.step === step)) continue;
      const held = weights.get(state.of) as W;
      const policy = await this.policyAt(state, step, held);
      state.snapshots.push({ step, policy, weights: held });
      state.snapshots.sort((a, b) => a.step - b.step);
    }
  }

  /** Drops the snapshots no rollout at `version` or later can draw. */
  evict(version: number): void {
    for (const state of this.states) {
      const oldest = this.view(state, version)[0]?.step ?? 0;
      state.snapshots = state.snapshots.filter((s) => s.step >= oldest);
    }
  }

  /**
   * Refills every pool with the snapshot steps a checkpoint listed (`saved`, by source then role;
   * step 0 for a pool it does not list), their weights from `held` (by policy, then step).
   */
  async restore(
    held: ReadonlyMap<string, ReadonlyMap<number, W>>,
    saved: Record<string, Record<string, number[]>> | undefined,
  ): Promise<void> {
    for (const state of this.states) {
      for (const step of saved?.[state.source]?.[state.role] ?? [0]) {
        const weights = held.get(state.of)?.get(step);
        if (!weights)
          throw new TrainerError(`checkpoint: opponent pool ${state.source}.${state.role} snapshot of step ${step} is missing`, {
            step,
          });
        const policy = await this.policyAt(state, step, weights);
        state.snapshots.push({ step, policy, weights });
      }
    }
  }

  /** Each pool's view for the rollout of `step` at `version`, its snapshots reseeded so the rollout samples the same on resume. */
  drawFor(version: number, step: number): PoolDraw<W> {
    const views = new Map<PoolState<W>, PoolSnapshot[]>();
    for (const state of this.states) {
      const view = this.view(state, version);
      if (view.length === 0)
        throw new TrainerError(`orchestrator: opponent pool ${state.source}.${state.role} holds no snapshot`, { step });
      for (const snapshot of view)
        snapshot.policy.loadRngState?.(hashSeed([this.seed, 'sample', state.source, state.role, step, snapshot.step]));
      views.set(state, view);
    }
    return { views, ages: new Map(), version, step };
  }

  /** The pools of source `name`. */
  ofSource(name: string): PoolState<W>[] {
    return this.states.filter((p) => p.source === name);
  }

  /** The snapshot each of `pools` plays in episode `i` of group `index`, each draw's age recorded in `draw.ages`. */
  pick(options: {
    source: TrainSource;
    pools: readonly PoolState<W>[];
    draw: PoolDraw<W>;
    index: number;
    i: number;
  }): Map<OpponentPool, PoolSnapshot> {
    const { source, pools, draw, index, i } = options;
    const draws = new Map<OpponentPool, PoolSnapshot>();
    for (const pool of pools) {
      const view = draw.views.get(pool) as PoolSnapshot[];
      const u = hashUniform([this.seed, 'draw', source.name, pool.role, draw.step, index, i]);
      const snapshot = view[pool.pool.pick(view.length, u)] as PoolSnapshot;
      draws.set(pool.pool, snapshot);
      const list = draw.ages.get(pool) ?? [];
      list.push(draw.version - snapshot.step);
      draw.ages.set(pool, list);
    }
    return draws;
  }

  /**
   * What a checkpoint of step `n` must hold of the pools: the snapshot steps of each (by source
   * then role), and per policy `published`'s versions before `n` plus every older snapshot's weights.
   */
  checkpointed(
    published: ReadonlyMap<number, ReadonlyMap<string, W>>,
    n: number,
  ): { pools: Record<string, Record<string, number[]>>; versions: Map<string, Map<number, W>> } {
    const pools: Record<string, Record<string, number[]>> = {};
    const versions = new Map<string, Map<number, W>>();
    const of = (policy: string) => versions.get(policy) ?? (versions.set(policy, new Map()).get(policy) as Map<number, W>);
    for (const [version, byPolicy] of published)
      if (version < n) for (const [policy, weights] of byPolicy) of(policy).set(version, weights);
    for (const state of this.states) {
      pools[state.source] ??= {};
      (pools[state.source] as Record<string, number[]>)[state.role] = state.snapshots.map((s) => s.step);
      const held = of(state.of);
      for (const snapshot of state.snapshots) {
        if (snapshot.step < n && !held.has(snapshot.step)) held.set(snapshot.step, snapshot.weights);
      }
    }
    return { pools, versions };
  }

  /** The snapshots a rollout at policy `version` draws from: the newest `keep` taken at or before it. */
  private view(state: PoolState<W>, version: number): PoolState<W>['snapshots'] {
    return state.snapshots.filter((s) => s.step <= version).slice(-state.pool.config.keep);
  }

  /** The snapshot's own policy at `weights`, seeded by pool and step. */
  private policyAt(state: PoolState<W>, step: number, weights: W) {
    return this.inferenceOf(state.of).evaluationPolicy({
      weights,
      version: step,
      seed: hashSeed([this.seed, 'pool', state.source, state.role, step]),
    });
  }
}

/** Per pool role: `pool/<source>/<role>/size` and `…/snapshot_age/mean` of one rollout's draws. */
export function poolMetrics<W>(draw: PoolDraw<W>): Record<string, number> {
  const metrics: Record<string, number> = {};
  for (const [pool, view] of draw.views) {
    const list = draw.ages.get(pool) ?? [];
    metrics[`pool/${pool.source}/${pool.role}/size`] = view.length;
    metrics[`pool/${pool.source}/${pool.role}/snapshot_age/mean`] = list.length
      ? list.reduce((a, b) => a + b, 0) / list.length
      : 0;
  }
  return metrics;
}
