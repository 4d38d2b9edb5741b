import type { Agent } from '../agent/agent.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import type { Sandbox } from '../runtime/runtime.ts';
import { scoreTrace } from '../task/scoring.ts';
import { selectTasks, type TaskSelection } from '../task/select.ts';
import type { Task } from '../task/task.ts';
import type { Taskset } from '../task/taskset.ts';
import { Trace } from '../trace/trace.ts';

/** One task scored with no agent action (`troupe validate --only-noop`), or with its gold reply (`--only-gold`). */
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

/** One task scored with its gold reply (`troupe validate --only-gold`). */
export interface GoldScore extends Omit<NoopScore, 'solvedByNothing'> {
  /** The task has no gold reply (`gold`, else `answer`, in its data). */
  goldMissing: boolean;
  /** The gold reply scores below 1: the task's rewards (or its gold) are wrong. */
  goldFails: boolean;
}

/** A task's gold reply: its data's `gold`, else its `answer` (a string or a number), else none. */
export function goldReply(data: Record<string, unknown>): string | undefined {
  for (const value of [data.gold, data.answer]) {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  }
  return undefined;
}

/**
 * Scores each task with its gold reply as the agent's final message (the sandbox booted and set
 * up as for {@link noopScores}, no model call); a gold reply scoring below 1 is flagged, a task
 * without one is reported as missing.
 */
export async function goldScores(options: {
  agent: Agent;
  taskset: Taskset;
  numTasks?: number;
  select?: TaskSelection;
}): Promise<GoldScore[]> {
  const scores = await scoreTasks({ ...options, reply: (task) => goldReply(task.data) });
  return scores.map(({ solvedByNothing: _unused, replied, ...score }) => ({
    ...score,
    goldMissing: !replied,
    goldFails: replied && score.reward < 1,
  }));
}

/**
 * Scores each task as if the agent did nothing: its sandbox is booted from `agent`'s runtime, the
 * task's `setup` runs, then its `finalize`, metrics and rewards see an untouched workspace and an
 * empty reply (no harness, no model call). A task whose reward is already ≥ 1 is flagged.
 */
export async function noopScores(options: {
  agent: Agent;
  taskset: Taskset;
  numTasks?: number;
  select?: TaskSelection;
}): Promise<NoopScore[]> {
  const scores = await scoreTasks({ ...options, reply: () => undefined });
  return scores.map(({ replied: _unused, ...score }) => score);
}

/** Scores each task without an agent run: the final reply is `reply(task)` (none when undefined). */
async function scoreTasks(options: {
  agent: Agent;
  taskset: Taskset;
  numTasks?: number;
  select?: TaskSelection;
  reply: (task: Task) => string | undefined;
}): Promise<(NoopScore & { replied: boolean })[]> {
  const { agent, taskset } = options;
  if (taskset.isInfinite && options.numTasks === undefined && options.select?.indices === undefined)
    throw new ConfigError(`--only-noop: taskset ${taskset.id} is endless; set --num-tasks or --select indices=…`);
  const tasks = selectTasks(taskset, options.select, options.numTasks);
  const scores: (NoopScore & { replied: boolean })[] = [];
  for (const [index, task] of tasks.entries()) {
    const trace = new Trace({
      task: task.record,
      agent: { name: agent.name, trainable: false, model: agent.model, harness: 'noop', runtime: agent.runtime.id, config: {} },
    });
    const reply = options.reply(task);
    // Marked sampled so rewards read it as the final reply (`lastReply`); this trace is printed
    // as scores only, never written to a run or trained on.
    if (reply !== undefined) trace.addMessage({ role: 'assistant', content: reply }, trace.addPrompt(task.promptMessages), true);
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
      replied: reply !== undefined,
    });
  }
  return scores;
}
