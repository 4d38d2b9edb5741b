import { existsSync } from 'node:fs';
import type { EnvDefinition } from '../env/env.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { Taskset } from '../task/taskset.ts';
import { arithmeticTaskset, lastInteger } from '../tasksets/arithmetic.ts';

type EnvLoader = () => Promise<EnvDefinition<string, Record<string, unknown>>>;
type TasksetLoader = (options: Record<string, unknown>) => Taskset | Promise<Taskset>;

const envs = new Map<string, EnvLoader>([
  ['single-agent', async () => (await import('./single-agent/single-agent-env.ts')).singleAgentEnv as never],
  ['best-of-n', async () => (await import('./best-of-n/best-of-n-env.ts')).bestOfNEnv as never],
  ['agentic-judge', async () => (await import('./agentic-judge/agentic-judge-env.ts')).agenticJudgeEnv as never],
  ['shared-agentic-judge', async () => (await import('./agentic-judge/agentic-judge-env.ts')).sharedAgenticJudgeEnv as never],
  ['proposer-solver', async () => (await import('./proposer-solver/proposer-solver-env.ts')).proposerSolverEnv as never],
  ['user-sim', async () => (await import('./user-sim/user-sim-env.ts')).userSimEnv as never],
  ['kuhn-poker', async () => (await import('./kuhn-poker/env.ts')).kuhnPokerEnv as never],
]);

const tasksets = new Map<string, TasksetLoader>([
  ['arithmetic', (options) => arithmeticTaskset(options as { size?: number; seed?: number })],
  ['proposer-solver-seeds', async () => (await import('./proposer-solver/seed-topics.ts')).proposerSolverSeeds()],
]);

/** Makes an env id available to `troupe eval --env <id>`. */
export function registerEnv(id: string, loader: EnvLoader): void {
  envs.set(id, loader);
}

/** Makes a taskset id available to `--taskset <id>`. */
export function registerTaskset(id: string, loader: TasksetLoader): void {
  tasksets.set(id, loader);
}

export function envIds(): string[] {
  return [...envs.keys()];
}

export async function loadEnvDefinition(id: string): Promise<EnvDefinition<string, Record<string, unknown>>> {
  const loader = envs.get(id);
  if (!loader) throw new ConfigError(`env.id ${JSON.stringify(id)} is unknown; known envs: ${envIds().join(', ')}`);
  return loader();
}

/**
 * A taskset by id (`arithmetic`, …) or a JSONL path. JSONL rows with an integer `answer` get
 * the `correct` reward (last integer of the reply equals the answer).
 */
export async function loadTaskset(ref: string | { id: string; [key: string]: unknown }): Promise<Taskset> {
  const { id, ...options } = typeof ref === 'string' ? { id: ref } : ref;
  const loader = tasksets.get(id);
  if (loader) return loader(options);
  if (id.endsWith('.jsonl')) {
    if (!existsSync(id)) throw new ConfigError(`env.taskset: file ${id} does not exist`);
    return Taskset.fromJsonl(id.replace(/^.*\//, '').replace(/\.jsonl$/, ''), id, (row) =>
      typeof row.answer === 'number'
        ? { rewards: [{ name: 'correct', fn: ({ trace }) => (lastInteger(trace.lastReply) === row.answer ? 1 : 0) }] }
        : {},
    );
  }
  throw new ConfigError(
    `env.taskset ${JSON.stringify(id)} is unknown; known tasksets: ${[...tasksets.keys()].join(', ')} (or a .jsonl path)`,
  );
}
