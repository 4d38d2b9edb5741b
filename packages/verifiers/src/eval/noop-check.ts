import type { Agent } from '../agent/agent.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import type { Sandbox } from '../runtime/runtime.ts';
import { scoreTrace } from '../task/scoring.ts';
import type { Taskset } from '../task/taskset.ts';
import { Trace } from '../trace/trace.ts';

/** One task scored with no agent action (`troupe validate --only-noop`). */
export interface NoopScore {
  index: number;
  task: string;
  /** Σ score·weight of the non-null rewards. */
  reward: number;
  rewards: Trace['rewards'];
  /** Errors of the boot, setup or scoring (a reward that threw is an error, never a silent 0). */
  errors: string[];
  /** The task already scores ≥ 1 with nothing done: its rewards cannot tell a solver from none. */
  solvedByNothing: boolean;
}

/**
 * Scores each task as if the agent did nothing: its sandbox is booted from `agent`'s runtime, the
 * task's `setup` runs, then its `finalize`, metrics and rewards see an untouched workspace and an
 * empty reply (no harness, no model call). A task whose reward is already ≥ 1 is flagged.
 */
export async function noopScores(options: { agent: Agent; taskset: Taskset; numTasks?: number }): Promise<NoopScore[]> {
  const { agent, taskset } = options;
  if (taskset.isInfinite && options.numTasks === undefined)
    throw new ConfigError(`--only-noop: taskset ${taskset.id} is endless; set --num-tasks`);
  const tasks = options.numTasks === undefined ? taskset.toArray() : taskset.head(options.numTasks).toArray();
  const scores: NoopScore[] = [];
  for (const [index, task] of tasks.entries()) {
    const trace = new Trace({
      task: task.record,
      agent: { name: agent.name, trainable: false, model: agent.model, harness: 'noop', runtime: agent.runtime.id, config: {} },
    });
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await agent.provision(task);
      await task.setup?.({ task, trace, sandbox });
      await task.finalize?.({ task, trace, sandbox });
      await scoreTrace({ task, trace, sandbox });
    } catch (error) {
      trace.recordError(error as Error, 'setup');
    } finally {
      await sandbox?.stop().catch((error: unknown) => trace.recordError(error as Error, 'finalize'));
    }
    const reward = trace.reward;
    scores.push({
      index,
      task: task.key,
      reward,
      rewards: trace.rewards,
      errors: trace.errors.map((error) => `${error.type}: ${error.message}`),
      solvedByNothing: reward >= 1,
    });
  }
  return scores;
}
