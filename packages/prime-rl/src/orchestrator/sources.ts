import type { Episode } from '@troupe/verifiers';
import { flattenRoleMetrics, roleMetrics } from '../metrics/role-metrics.ts';
import type { TrainSource } from './types.ts';

/** Task `index` of the source's taskset (wrapping around a finite one). */
export function taskAt(source: TrainSource, index: number) {
  const size = source.taskset.isInfinite ? Number.POSITIVE_INFINITY : source.taskset.size;
  return source.taskset.at(Number.isFinite(size) ? index % size : index);
}

/**
 * prime-rl's per-source metric keys: `train/<source>/<role>/reward/mean`, `…/advantage/std`,
 * `…/is_trainable/mean`, `…/metric/<name>/mean` (each trace metric), and `train/<source>/episodes`.
 */
export function sourceMetrics(source: string, episodes: readonly Episode[]): Record<string, number> {
  const out = flattenRoleMetrics({ metrics: roleMetrics({ episodes }), prefix: `train/${source}` });
  const byRole = new Map<string, { traces: number; trainable: number; metrics: Map<string, number[]> }>();
  for (const episode of episodes) {
    for (const trace of episode.traces) {
      let role = byRole.get(trace.agent.name);
      if (!role) {
        role = { traces: 0, trainable: 0, metrics: new Map() };
        byRole.set(trace.agent.name, role);
      }
      role.traces++;
      if (trace.agent.trainable && trace.ok) role.trainable++;
      for (const [name, value] of Object.entries(trace.metrics)) {
        if (typeof value !== 'number' || !Number.isFinite(value)) continue;
        const list = role.metrics.get(name) ?? [];
        list.push(value);
        role.metrics.set(name, list);
      }
    }
  }
  for (const [name, role] of byRole) {
    out[`train/${source}/${name}/is_trainable/mean`] = role.trainable / role.traces;
    for (const [metric, values] of role.metrics) {
      out[`train/${source}/${name}/metric/${metric}/mean`] = values.reduce((a, b) => a + b, 0) / values.length;
    }
  }
  out[`train/${source}/episodes`] = episodes.length;
  out[`train/${source}/failed_episodes`] = episodes.filter((e) => !e.ok).length;
  return out;
}
