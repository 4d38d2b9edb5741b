import type { Episode, Trace } from '@troupe/verifiers';
import { isTrainableTrace, maskedCount, traceReward } from '../algorithms/trainable-traces.ts';

/** Mean, min and max of a set of numbers; all null when the set is empty. */
export interface Summary {
  mean: number | null;
  min: number | null;
  max: number | null;
}

/** Training-signal metrics of one role (agent name), as a plain object. */
export interface RoleMetrics {
  /** Every trace of the role that arrived. */
  traces: number;
  /** Traces that train (ok, trainable seat, sampled tokens). */
  trainableTraces: number;
  /** Traces with `ok === false` (including seats of failed episodes). */
  failedTraces: number;
  /** Reward (Σ score·weight) over the role's ok traces. */
  reward: Summary;
  /**
   * Advantage over the trainable traces that carry advantages, one value per trace (the mean of
   * its sampled-token advantages): mean and population standard deviation.
   */
  advantage: { mean: number | null; std: number | null };
  /** Fraction of scored traces whose advantages are all 0 (null when none was scored). */
  zeroAdvantageFraction: number | null;
  /** Token counts over the trainable traces: all tokens of their nodes, and the sampled ones. */
  tokens: { total: number; sampled: number };
}

/**
 * Per-role metrics of scored episodes: rewards, advantages, the fraction of zero-advantage
 * traces and token counts. Keys are role names, in first-seen order.
 */
export function roleMetrics(options: { episodes: readonly Episode[] }): Record<string, RoleMetrics> {
  const accumulators = new Map<string, Accumulator>();
  for (const episode of options.episodes) {
    for (const trace of episode.traces) {
      let accumulator = accumulators.get(trace.agent.name);
      if (!accumulator) {
        accumulator = new Accumulator();
        accumulators.set(trace.agent.name, accumulator);
      }
      accumulator.add(trace);
    }
  }
  const out: Record<string, RoleMetrics> = {};
  for (const [role, accumulator] of accumulators) out[role] = accumulator.finish();
  return out;
}

/**
 * Flattens role metrics into `prefix/role/metric/stat` → number entries for a logger, skipping
 * nulls, e.g. `train/<source>/player0/reward/mean`.
 */
export function flattenRoleMetrics(options: { metrics: Record<string, RoleMetrics>; prefix?: string }): Record<string, number> {
  const out: Record<string, number> = {};
  const visit = (path: string, value: unknown): void => {
    if (typeof value === 'number') out[path] = value;
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) visit(`${path}/${key}`, inner);
    }
  };
  for (const [role, metrics] of Object.entries(options.metrics)) {
    visit(options.prefix ? `${options.prefix}/${role}` : role, metrics);
  }
  return out;
}

class Accumulator {
  traces = 0;
  trainable = 0;
  failed = 0;
  rewardCount = 0;
  rewardSum = 0;
  rewardMin = Number.POSITIVE_INFINITY;
  rewardMax = Number.NEGATIVE_INFINITY;
  scored = 0;
  zero = 0;
  advantageSum = 0;
  advantageSquares = 0;
  totalTokens = 0;
  sampledTokens = 0;

  add(trace: Trace): void {
    this.traces++;
    if (!trace.ok) {
      this.failed++;
    } else {
      const reward = traceReward(trace);
      this.rewardCount++;
      this.rewardSum += reward;
      if (reward < this.rewardMin) this.rewardMin = reward;
      if (reward > this.rewardMax) this.rewardMax = reward;
    }
    if (!isTrainableTrace(trace)) return;
    this.trainable++;
    let count = 0;
    let sum = 0;
    let allZero = true;
    for (const node of trace.nodes) {
      this.totalTokens += node.tokenIds?.length ?? 0;
      const sampled = maskedCount(node.mask);
      this.sampledTokens += sampled;
      const advantages = node.advantages;
      if (advantages !== undefined) {
        for (let i = 0; i < advantages.length; i++) {
          count++;
          sum += advantages[i]!;
          if (advantages[i] !== 0) allZero = false;
        }
      } else if (node.advantage !== undefined) {
        // One value for every sampled token of the node.
        count += sampled;
        sum += node.advantage * sampled;
        if (node.advantage !== 0 && sampled > 0) allZero = false;
      }
    }
    if (count === 0) return;
    const advantage = sum / count;
    this.scored++;
    if (allZero) this.zero++;
    this.advantageSum += advantage;
    this.advantageSquares += advantage * advantage;
  }

  finish(): RoleMetrics {
    const rewardMean = this.rewardCount ? this.rewardSum / this.rewardCount : null;
    const advantageMean = this.scored ? this.advantageSum / this.scored : null;
    return {
      traces: this.traces,
      trainableTraces: this.trainable,
      failedTraces: this.failed,
      reward: {
        mean: rewardMean,
        min: this.rewardCount ? this.rewardMin : null,
        max: this.rewardCount ? this.rewardMax : null,
      },
      advantage: {
        mean: advantageMean,
        std:
          advantageMean === null
            ? null
            : Math.sqrt(Math.max(0, this.advantageSquares / this.scored - advantageMean * advantageMean)),
      },
      zeroAdvantageFraction: this.scored ? this.zero / this.scored : null,
      tokens: { total: this.totalTokens, sampled: this.sampledTokens },
    };
  }
}
