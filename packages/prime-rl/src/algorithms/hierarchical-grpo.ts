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
export type HierarchicalGrpoConfig = z.input<typeof HierarchicalGrpoConfigSchema>;

/** Running statistics of one peer set; reused across episodes and groups (see `stamp`). */
interface PeerSet {
  sum: number;
  count: number;
  min: number;
  max: number;
  /** Which episode or group the statistics belong to; stale ones are reset on first use. */
  stamp: number;
}

/**
 * Hierarchical GRPO for multi-role envs such as proposer-solver. Peer sets: `(role, episode)` for
 * the roles in `episodeAgents`, `(role)` across the group's episodes for the others. In each peer
 * set `A_t = r_t − mean(r)`, broadcast to the sampled tokens; singletons and ties give exactly 0.
 * Roles never mix, so advantages sum to 0 per peer set. No std normalisation, no length penalty.
 */
export class HierarchicalGrpo implements Algorithm {
  readonly type = 'hierarchical-grpo';
  readonly episodeAgents: ReadonlySet<string>;
  // Scratch state reused across calls (scoreGroup is synchronous, so calls never interleave).
  private readonly groupSets = new Map<string, PeerSet>();
  private readonly episodeSets = new Map<string, PeerSet>();
  private readonly groupTraces: Trace[] = [];
  private readonly groupRewards: number[] = [];
  private readonly episodeTraces: Trace[] = [];
  private readonly episodeRewards: number[] = [];
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
    const groupTraces = this.groupTraces;
    const groupRewards = this.groupRewards;
    const episodeTraces = this.episodeTraces;
    const episodeRewards = this.episodeRewards;
    groupTraces.length = 0;
    groupRewards.length = 0;
    for (let e = 0; e < episodes.length; e++) {
      const traces = episodes[e]!.traces;
      const episodeStamp = ++this.stamp;
      episodeTraces.length = 0;
      episodeRewards.length = 0;
      for (let t = 0; t < traces.length; t++) {
        const trace = traces[t]!;
        if (!isTrainableTrace(trace)) continue;
        const role = trace.agent.name;
        const reward = traceReward(trace);
        if (this.episodeAgents.has(role)) {
          add(this.episodeSets, role, reward, episodeStamp);
          episodeTraces.push(trace);
          episodeRewards.push(reward);
        } else {
          add(this.groupSets, role, reward, groupStamp);
          groupTraces.push(trace);
          groupRewards.push(reward);
        }
      }
      for (let i = 0; i < episodeTraces.length; i++) {
        const trace = episodeTraces[i]!;
        assignAdvantages(trace, advantage(this.episodeSets.get(trace.agent.name)!, episodeRewards[i]!));
      }
    }
    for (let i = 0; i < groupTraces.length; i++) {
      const trace = groupTraces[i]!;
      assignAdvantages(trace, advantage(this.groupSets.get(trace.agent.name)!, groupRewards[i]!));
    }
    groupTraces.length = 0;
    episodeTraces.length = 0;
  }
}

function add(sets: Map<string, PeerSet>, role: string, reward: number, stamp: number): void {
  const set = sets.get(role);
  if (set === undefined) {
    sets.set(role, { sum: reward, count: 1, min: reward, max: reward, stamp });
  } else if (set.stamp !== stamp) {
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
}

function advantage(set: PeerSet, reward: number): number {
  return set.min === set.max ? 0 : reward - set.sum / set.count;
}
