import type { Episode } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import type { Algorithm } from './algorithm.ts';
import { hasTrainableTrace, markFailedEpisode } from './trainable-traces.ts';

/** Options of {@link GroupScorer}. */
export interface GroupScorerOptions {
  algorithm: Algorithm;
  /** Episodes per group (rollouts of one task, sharing `episode.group.id`). */
  groupSize: number;
}

/**
 * Runs an algorithm's hooks the way the orchestrator does: on each arriving episode, a failed
 * episode marks its traces failed, then `scoreEpisode` runs if a trace is trainable; when the
 * `groupSize`-th episode of a group arrives, the group is sorted by `group.index` and
 * `scoreGroup` runs if some trace is trainable. Returns the finished group, else null.
 */
export class GroupScorer {
  readonly algorithm: Algorithm;
  readonly groupSize: number;
  private readonly pending = new Map<string, Episode[]>();

  constructor(options: GroupScorerOptions) {
    if (!Number.isInteger(options.groupSize) || options.groupSize < 1) {
      throw new ConfigError(`groupSize: must be a positive integer, got ${options.groupSize}`, { path: 'groupSize' });
    }
    this.algorithm = options.algorithm;
    this.groupSize = options.groupSize;
  }

  /** Number of groups waiting for more episodes. */
  get pendingGroups(): number {
    return this.pending.size;
  }

  async addEpisode(episode: Episode): Promise<Episode[] | null> {
    markFailedEpisode(episode);
    if (this.algorithm.scoreEpisode && hasTrainableTrace(episode)) await this.algorithm.scoreEpisode(episode);
    let group = this.pending.get(episode.group.id);
    if (!group) {
      group = [];
      this.pending.set(episode.group.id, group);
    }
    group.push(episode);
    if (group.length < this.groupSize) return null;
    this.pending.delete(episode.group.id);
    group.sort((a, b) => a.group.index - b.group.index);
    if (hasTrainableTrace(group)) await this.algorithm.scoreGroup(group);
    return group;
  }

  /** Drops a group that will not complete (e.g. cancelled as stale): it is never scored. */
  dropGroup(groupId: string): Episode[] {
    const group = this.pending.get(groupId) ?? [];
    this.pending.delete(groupId);
    return group;
  }
}
