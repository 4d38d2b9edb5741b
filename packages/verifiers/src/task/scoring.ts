import { RewardError } from '../errors/troupe-error.ts';
import type { Trace } from '../trace/trace.ts';
import type { MetricFunction, RewardFunction, TaskContext, TaskData } from './task.ts';

function ordered<T extends { name: string; priority?: number }>(items: T[]): T[] {
  return [...items].sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || a.name.localeCompare(b.name));
}

/**
 * Scores a trace with its task's metrics (concurrently) then rewards (in priority order).
 * Every expected name is seeded null first; a function that throws records a `RewardError`
 * on the trace (ok=false) and leaves its value null, never a silent 0.
 */
export async function scoreTrace<D extends TaskData>(context: TaskContext<D>): Promise<void> {
  const { task, trace } = context;
  for (const m of task.metrics) if (!(m.name in trace.metrics)) trace.metrics[m.name] = null;
  for (const r of task.rewards) if (!(r.name in trace.rewards)) trace.rewards[r.name] = null;
  await Promise.all(
    ordered(task.metrics).map(async (metric) => {
      const value = await run(metric, context, trace);
      if (value === undefined) return;
      for (const [name, v] of Object.entries(value)) trace.recordMetric(name, v);
    }),
  );
  for (const reward of ordered(task.rewards)) {
    const value = await run(reward, context, trace);
    if (value === undefined) continue;
    for (const [name, v] of Object.entries(value)) trace.recordReward(name, v, reward.weight ?? 1);
  }
}

async function run<D extends TaskData>(
  fn: RewardFunction<D> | MetricFunction<D>,
  context: TaskContext<D>,
  trace: Trace,
): Promise<Record<string, number> | undefined> {
  if (fn.needsSandbox && !context.sandbox) return undefined;
  try {
    const value = await fn.fn(context);
    const map = typeof value === 'number' ? { [fn.name]: value } : value;
    for (const [name, v] of Object.entries(map)) {
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new RewardError(`returned ${String(v)} for ${name}, not a finite number`);
    }
    return map;
  } catch (error) {
    trace.recordError(new RewardError(`${fn.name}: ${(error as Error).message ?? String(error)}`, { cause: error }), 'scoring');
    return undefined;
  }
}
