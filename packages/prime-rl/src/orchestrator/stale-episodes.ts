import type { Episode } from '@troupe/verifiers';
import type { Algorithm } from '../algorithms/algorithm.ts';
import { hasTrainableTrace, isTrainableTrace } from '../algorithms/trainable-traces.ts';
import type { ScoredGroup } from './types.ts';

/**
 * The oldest policy version an episode's trainable traces were sampled under: the smallest
 * `calls[].policyVersion` they recorded, else `dispatched` (the version its rollout was pinned to).
 * Null when no trace is trainable (a frozen or failed episode trains nothing, so it never goes
 * stale: prime-rl's "frozen-sourced episodes (no policy span) never go stale",
 * `src/prime_rl/orchestrator/train_sink.py:175` at 559b447).
 */
export function episodeVersion(episode: Episode, dispatched: number): number | null {
  let oldest: number | null = null;
  for (const trace of episode.traces) {
    if (!isTrainableTrace(trace)) continue;
    oldest = Math.min(oldest ?? dispatched, dispatched);
    for (const call of trace.calls) if (call.policyVersion !== undefined) oldest = Math.min(oldest, call.policyVersion);
  }
  return oldest;
}

/** What {@link dropStaleEpisodes} kept and dropped. */
export interface StaleDrop {
  /** The groups that still train, each without its stale episodes (rescored when its algorithm says so). */
  groups: ScoredGroup[];
  /** Episodes more than `maxOffPolicySteps` behind, counted whether dropped alone or with their group. */
  episodes: number;
  /** Groups dropped whole: every episode stale, or some stale under an algorithm whose rule is `group`. */
  groupsDropped: number;
}

/**
 * Drops the episodes that would train at step `step` more than `maxOffPolicySteps` behind. An
 * episode's staleness is `(step − 1) − version`, its version from {@link episodeVersion}, at the
 * step that consumes it: trainer steps that passed while it waited in the queue count, as in
 * prime-rl (`min_fresh_version`, `src/prime_rl/orchestrator/utils.py:51-54`, and the queue sweep
 * `_drop_stale`, `src/prime_rl/orchestrator/train_sink.py:166-205`, which voids each queued trace
 * on its own; `max_off_policy_steps` is "queue time included",
 * `packages/prime-rl-configs/src/prime_rl/configs/orchestrator.py:532-533`, all at 559b447).
 * A group with a stale episode follows its algorithm's `staleEpisodes` rule: `rescore` (GRPO,
 * MaxRL, hierarchical GRPO: `scoreGroup` runs again over the survivors, so the group baseline is
 * theirs), `keep` (RAE: per-trace baselines, survivors keep their advantages, as prime-rl's sweep
 * does), `group` (the default for an algorithm that does not say: the whole group is dropped).
 */
export async function dropStaleEpisodes(options: {
  groups: readonly ScoredGroup[];
  step: number;
  maxOffPolicySteps: number;
  algorithmOf: (source: string) => Algorithm;
}): Promise<StaleDrop> {
  const { step, maxOffPolicySteps, algorithmOf } = options;
  const result: StaleDrop = { groups: [], episodes: 0, groupsDropped: 0 };
  for (const group of options.groups) {
    const fresh = group.episodes.filter((episode) => {
      const version = episodeVersion(episode, group.version);
      return version === null || step - 1 - version <= maxOffPolicySteps;
    });
    const stale = group.episodes.length - fresh.length;
    result.episodes += stale;
    if (stale === 0) {
      result.groups.push(group);
      continue;
    }
    const algorithm = algorithmOf(group.source);
    const rule = algorithm.staleEpisodes ?? 'group';
    if (rule === 'group' || !hasTrainableTrace(fresh)) {
      result.groupsDropped++;
      continue;
    }
    if (rule === 'rescore') await algorithm.scoreGroup(fresh);
    result.groups.push({ ...group, episodes: fresh });
  }
  return result;
}
