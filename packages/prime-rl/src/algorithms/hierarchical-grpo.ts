import { ConfigError, type Episode, type Trace } from '@troupe/verifiers';
import { z } from 'zod';
import type { Algorithm, EnvInfo } from './algorithm.ts';
import { assignAdvantages } from './assign-advantages.ts';
import { isTrainableTrace, traceReward } from './trainable-traces.ts';

/** Config of {@link HierarchicalGrpo}. */
export const HierarchicalGrpoConfigSchema = z.strictObject({
  type: z.literal('hierarchical-grpo'),
  /**
   * Roles compared only within one episode (e.g. `['solver']`: solvers of the same proposed
   * problem). Every other role is compared across the group (e.g. proposers of one seed task).
   */
  episodeAgents: z
    .array(z.string().min(1, { message: 'a role name cannot be empty' }), {
      message: "episodeAgents is required: the roles compared per episode, e.g. ['solver']",
    })
    .min(1, {
      message:
        "episodeAgents must list at least one per-episode role (e.g. ['solver']); with none, hierarchical-grpo is plain grpo per role: use `grpo`",
    })
    .refine((roles) => new Set(roles).size === roles.length, { message: 'episodeAgents lists a role twice' }),
});
/**
 * The config `new HierarchicalGrpo(config)` accepts: `type: 'hierarchical-grpo'` and `episodeAgents`,
 * the roles compared within one episode (at least one, no repeats); parsed with
 * {@link HierarchicalGrpoConfigSchema}.
 */
export type HierarchicalGrpoConfig = z.input<typeof HierarchicalGrpoConfigSchema>;

/** Running statistics of one peer set; reused across episodes and groups (see `stamp`). */
interface PeerSet {
  sum: number;
  count: number;
  min: number;
  max: number;
  /** Which episode or group the statistics belong to; stale ones are reset on first use. */
  stamp: number;
  /** The role is in `episodeAgents` (peers within an episode), else peers across the group. */
  readonly perEpisode: boolean;
}

/**
 * Hierarchical GRPO for multi-role envs such as proposer-solver. Peer sets: `(role, episode)` for
 * the roles in `episodeAgents`, `(role)` across the group's episodes for the others. In each peer
 * set `A_t = r_t − mean(r)`, broadcast to the sampled tokens; singletons and ties give exactly 0.
 * Roles never mix, so advantages sum to 0 per peer set. No std normalisation, no length penalty.
 */
export class HierarchicalGrpo implements Algorithm {
  readonly type = 'hierarchical-grpo';
  /** A stale episode is dropped and the group rescored without it: the cross-episode peer sets lose it. */
  readonly staleEpisodes = 'rescore';
  readonly episodeAgents: ReadonlySet<string>;
  // Scratch state reused across calls (scoreGroup is synchronous, so calls never interleave).
  // Filled by index and never truncated: `length = 0` would free the backing stores, and every
  // group would grow them again.
  private readonly sets = new Map<string, PeerSet>();
  /** The last role looked up and its set (roles repeat from trace to trace). */
  private lastRole: string | null = null;
  private lastSet: PeerSet | null = null;
  private readonly groupPeers = new PeerList();
  private readonly episodePeers = new PeerList();
  private stamp = 0;

  constructor(config: HierarchicalGrpoConfig) {
    this.episodeAgents = new Set(HierarchicalGrpoConfigSchema.parse(config).episodeAgents);
  }

  /**
   * Refuses envs where the peer sets make no sense: a single-role env (every peer set is the whole
   * group: use `grpo`), a zero-sum game (the group mean is ≈ 0 by construction: use `rae`), and an
   * `episodeAgents` role the env does not have.
   */
  validateEnv(env: EnvInfo): void {
    const roles = new Set(env.roles);
    if (env.zeroSum) {
      throw new ConfigError(
        `algorithm.type: hierarchical-grpo does not fit env '${env.id}': it is a zero-sum game, where the ` +
          'rewards of one episode cancel and per-role group means carry no signal; use `rae` for self-play',
      );
    }
    if (roles.size < 2) {
      throw new ConfigError(
        `algorithm.type: hierarchical-grpo does not fit env '${env.id}': it has a single role ` +
          `(${[...roles].join(', ') || 'none'}), so there is no hierarchy to compare within; use \`grpo\` for flat envs`,
      );
    }
    for (const role of this.episodeAgents) {
      if (!roles.has(role)) {
        throw new ConfigError(
          `algorithm.episodeAgents: role '${role}' is not a role of env '${env.id}' (roles: ${[...roles].join(', ')})`,
        );
      }
    }
  }

  scoreGroup(episodes: readonly Episode[]): void {
    const groupStamp = ++this.stamp;
    const groupPeers = this.groupPeers;
    const episodePeers = this.episodePeers;
    let groupCount = 0;
    for (let e = 0; e < episodes.length; e++) {
      const traces = episodes[e]!.traces;
      const episodeStamp = ++this.stamp;
      let episodeCount = 0;
      for (let t = 0; t < traces.length; t++) {
        const trace = traces[t]!;
        if (!isTrainableTrace(trace)) continue;
        const role = trace.agent.name;
        const reward = traceReward(trace);
        const set = this.setOf(role);
        if (set.perEpisode) episodePeers.set(episodeCount++, trace, reward, add(set, reward, episodeStamp));
        else groupPeers.set(groupCount++, trace, reward, add(set, reward, groupStamp));
      }
      episodePeers.assign(episodeCount);
    }
    groupPeers.assign(groupCount);
  }

  /** The peer set of a role (created on first use; stamp 0 is no episode's or group's). */
  private setOf(role: string): PeerSet {
    if (role === this.lastRole) return this.lastSet!;
    let set = this.sets.get(role);
    if (set === undefined) {
      set = { sum: 0, count: 0, min: 0, max: 0, stamp: 0, perEpisode: this.episodeAgents.has(role) };
      this.sets.set(role, set);
    }
    this.lastRole = role;
    this.lastSet = set;
    return set;
  }
}

/** Traces with their rewards and peer sets, by index; `assign` gives each its advantage and drops the references. */
class PeerList {
  private readonly traces: (Trace | undefined)[] = [];
  private readonly sets: (PeerSet | undefined)[] = [];
  private rewards = new Float64Array(16);

  set(index: number, trace: Trace, reward: number, set: PeerSet): void {
    if (index === this.rewards.length) {
      const grown = new Float64Array(2 * index);
      grown.set(this.rewards);
      this.rewards = grown;
    }
    this.traces[index] = trace;
    this.sets[index] = set;
    this.rewards[index] = reward;
  }

  assign(count: number): void {
    const { traces, sets, rewards } = this;
    for (let i = 0; i < count; i++) {
      assignAdvantages(traces[i]!, advantage(sets[i]!, rewards[i]!));
      traces[i] = undefined;
      sets[i] = undefined;
    }
  }
}

/** Adds a reward to a peer set (reset when it belongs to another stamp); returns the set. */
function add(set: PeerSet, reward: number, stamp: number): PeerSet {
  if (set.stamp !== stamp) {
    set.sum = reward;
    set.count = 1;
    set.min = reward;
    set.max = reward;
    set.stamp = stamp;
  } else {
    set.sum += reward;
    set.count++;
    if (reward < set.min) set.min = reward;
    if (reward > set.max) set.max = reward;
  }
  return set;
}

function advantage(set: PeerSet, reward: number): number {
  return set.min === set.max ? 0 : reward - set.sum / set.count;
}
