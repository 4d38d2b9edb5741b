import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError, EnvError, SandboxError } from '../../../errors/troupe-error.ts';
import type { Sandbox } from '../../../runtime/runtime.ts';
import { Task } from '../../../task/task.ts';
import type { Episode } from '../../../trace/episode.ts';
import type { Trace } from '../../../trace/trace.ts';
import { defineEnv, type EnvDefinition } from '../../env.ts';
import { type ArtifactReport, restoreArtifacts } from './artifacts.ts';
import { type JudgeMode, judgePrompt } from './judge-prompt.ts';
import { type JudgePaths, judgeFinalReply, judgePaths, prepareJudgeWorkspace, verdictText } from './judge-workspace.ts';
import {
  DEFAULT_RUBRIC,
  judgeScore,
  loadRubricFile,
  parseVerdicts,
  type Rubric,
  RubricSchema,
  type ScoredVerdict,
} from './rubric.ts';

/** Inline text, or `{ path }` to a file read at construction. */
const TextOrFileSchema = z.union([z.string(), z.object({ path: z.string().min(1) }).strict()]).transform((value, context) => {
  if (typeof value === 'string') return value;
  try {
    return readFileSync(value.path, 'utf8');
  } catch (error) {
    context.addIssue({ code: 'custom', message: `cannot read ${value.path}: ${(error as Error).message}` });
    return z.NEVER;
  }
});

/** Options of `agentic-judge` and `shared-agentic-judge` (keys of `[env]`). */
export const AgenticJudgeOptionsSchema = z
  .object({
    /** The judging policy, replacing the default; `{prompt}` marks where the solver's task goes. */
    policy: TextOrFileSchema.optional(),
    /** Hints for the judge (e.g. what a correct solution must do). */
    hint: TextOrFileSchema.optional(),
    /** The rubric: inline `{ criteria = [...] }` or a path to a JSON/TOML file (default: `solved` no/yes). */
    rubric: z
      .union([z.string().min(1), RubricSchema])
      .default(DEFAULT_RUBRIC)
      .transform((value, context): Rubric => {
        if (typeof value !== 'string') return value;
        try {
          return loadRubricFile(value);
        } catch (error) {
          context.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
    /** Multiplies the weights of the taskset's own rewards on the solver's trace (default 0: only the judge counts). */
    taskWeight: z.number().min(0).default(0),
    /** Weight of the `judge` reward. */
    judgeWeight: z.number().min(0).default(1),
  })
  .strict();
/**
 * The options of `agentic-judge` / `shared-agentic-judge` after parsing (rubric loaded, defaults
 * applied); see {@link AgenticJudgeOptionsSchema}.
 */
export type AgenticJudgeOptions = z.output<typeof AgenticJudgeOptionsSchema>;

/** What the judge's trace carries in `info.verdict` once its verdict validated. */
export interface JudgeVerdictInfo {
  verdicts: Omit<ScoredVerdict, 'weight'>[];
  score: number;
}

function judgeTask(options: {
  task: Task;
  solution: Trace;
  config: AgenticJudgeOptions;
  mode: JudgeMode;
  paths: JudgePaths;
  workdir: string;
  artifacts?: ArtifactReport;
}): Task {
  const { task, solution, config, paths } = options;
  const traceJson = JSON.stringify(solution.toJSON());
  const prompt = judgePrompt({
    taskPrompt: task.promptText,
    ...(config.policy !== undefined ? { policy: config.policy } : {}),
    ...(config.hint !== undefined ? { hint: config.hint } : {}),
    rubric: config.rubric,
    mode: options.mode,
    paths,
    workdir: options.workdir,
    ...(options.artifacts ? { artifacts: options.artifacts } : {}),
    solverReply: solution.lastReply,
  });
  return new Task(
    {
      name: `judge:${task.key}`,
      prompt,
      ...(task.data.image ? { image: task.data.image } : {}),
      ...(task.data.workdir ? { workdir: task.data.workdir } : {}),
      ...(task.data.timeout ? { timeout: task.data.timeout } : {}),
      info: {
        judged: { task: task.key, trace: solution.id },
        mode: options.mode,
        ...(options.artifacts ? { artifacts: options.artifacts } : {}),
      },
    },
    {
      key: `judge:${task.key}`,
      type: 'judge',
      setup: async ({ sandbox, trace }) => {
        if (!sandbox) throw new EnvError('the judge task needs a sandbox');
        trace.info.mode = options.mode;
        // The judge runs in a sandbox of the solver's runtime, whatever its own role config says.
        trace.info.sandbox = { runtime: sandbox.runtime, id: sandbox.id };
        if (options.artifacts) trace.info.artifacts = options.artifacts;
        await prepareJudgeWorkspace({ sandbox, paths, traceJson });
      },
      finalize: async ({ trace, sandbox }) => {
        // Everything the judge started (a thief its commands left behind included) dies before
        // its verdict is read; one that survives errors the judge's trace.
        if (sandbox) await killJudgeProcesses(sandbox);
        // The verdict channel is the judge's own final reply, recorded by interception from the
        // model's response: nothing that runs in a sandbox (the solver's code, leftovers, an
        // armed artifact the judge runs) can write it. No file is read as a verdict.
        const verdicts = parseVerdicts({ text: verdictText(judgeFinalReply(trace)), rubric: config.rubric });
        const info: JudgeVerdictInfo = {
          verdicts: verdicts.map(({ weight: _weight, ...rest }) => rest),
          score: judgeScore(verdicts),
        };
        trace.info.verdict = info;
      },
    },
  );
}

/**
 * Kills every process the solver left in its sandbox. The shared judge enters that sandbox, so a
 * runtime that cannot kill them all (no `killAll`) is refused; the isolated judge gets a fresh
 * sandbox, and the solver's is stopped after its artifacts are copied (containers are removed).
 */
async function killSolverProcesses(sandbox: Sandbox, mode: JudgeMode): Promise<void> {
  if (sandbox.killAll) {
    await sandbox.killAll();
    return;
  }
  if (mode === 'shared') {
    throw new EnvError(
      `shared-agentic-judge: the ${sandbox.runtime} runtime cannot kill every process the solver left (no killAll), so the judge would share its sandbox with them; use agentic-judge, or the local or docker runtime`,
    );
  }
}

/**
 * Kills every process the judge's program started, before its verdict is read: `killAll` where
 * the runtime has it (a PID namespace on local as root, process groups and a /proc scan
 * otherwise, a container restart on Docker), else the judge's own sandbox is stopped (the
 * isolated judge; the shared one needs `killAll`, checked before the judge runs). A process that
 * survives — `killAll` could not confirm they all died — is a `SandboxError` on the judge's trace.
 */
async function killJudgeProcesses(sandbox: Sandbox): Promise<void> {
  try {
    if (sandbox.killAll) await sandbox.killAll();
    else await sandbox.stop();
  } catch (error) {
    throw new SandboxError(
      `a process the judge started may have survived in sandbox ${sandbox.id} (${(error as Error).message}), so its verdict is not read`,
      { cause: error },
    );
  }
}

function describeFailure(trace: Trace): string {
  const error = trace.errors.at(-1);
  return error ? `${error.type}: ${error.message}` : 'not ok';
}

type JudgeEnvDefinition = EnvDefinition<'solver' | 'judge', AgenticJudgeOptions>;

/**
 * Refuses a judge that cannot re-verify by execution, and a judge harness that needs a container
 * when the solver's runtime (where the judge runs) has none.
 */
function validateJudgeRoles(roles: Parameters<NonNullable<JudgeEnvDefinition['validate']>>[0]['roles']): void {
  const { harness } = roles.judge;
  if (!harness.capabilities.executesCode) {
    throw new ConfigError(
      `env.judge.harness ${JSON.stringify(harness.id)} cannot execute code, and an agentic judge must re-verify by execution; use a code-executing harness (e.g. "bash") or a plugged judge instead (a rubric judge on the task)`,
    );
  }
  if (harness.capabilities.needsContainer && !roles.solver.runtime.capabilities.container) {
    throw new ConfigError(
      `env.judge.harness ${JSON.stringify(harness.id)} needs a container, but the judge runs in the solver's runtime ${JSON.stringify(roles.solver.runtime.id)}; set env.solver.runtime = "docker"`,
    );
  }
}

/**
 * Puts the judge's verdict on the solver's trace: `judge/<criterion>` metrics and the `judge`
 * reward (null when the judge failed, never 0), the taskset's own rewards weighted by `taskWeight`.
 */
function scoreSolver(episode: Episode, options: AgenticJudgeOptions): void {
  const solver = episode.traces.find((t) => t.agent.name === 'solver');
  const judge = episode.traces.find((t) => t.agent.name === 'judge');
  if (!solver) return;
  for (const reward of Object.values(solver.rewards)) if (reward) reward.weight *= options.taskWeight;
  const verdict = judge?.ok ? (judge.info.verdict as JudgeVerdictInfo | undefined) : undefined;
  if (!verdict) {
    // The judge failed: its trace carries the error; the solver's judge scores stay null, never 0.
    for (const criterion of options.rubric.criteria) solver.recordMetric(`judge/${criterion.name}`, null);
    solver.rewards.judge = null;
    return;
  }
  for (const v of verdict.verdicts) solver.recordMetric(`judge/${v.name}`, v.score);
  solver.recordReward('judge', verdict.score, options.judgeWeight);
  solver.info.verdict = { judgeTrace: judge?.id, ...verdict };
}

function definition(id: 'agentic-judge' | 'shared-agentic-judge', mode: JudgeMode): JudgeEnvDefinition {
  return defineEnv({
    id,
    description:
      mode === 'shared'
        ? 'A solver runs the task; a judge agent then enters the same sandbox as it was left and writes a verdict per rubric criterion.'
        : 'A solver runs the task; a judge agent gets a fresh sandbox with only the declared artifacts restored and writes a verdict per rubric criterion.',
    roles: { solver: {}, judge: { trainable: false } },
    options: AgenticJudgeOptionsSchema as unknown as z.ZodType<AgenticJudgeOptions>,
    maxConcurrentAgents: 1,
    validate: ({ roles }) => validateJudgeRoles(roles),
    setup({ agents }) {
      agents.judge.trainable = false;
    },
    async run({ task, agents, options }) {
      // The judge's sandbox always comes from the solver's runtime policy.
      const solverBox = await agents.solver.provision(task);
      let judgeBox: Sandbox | undefined;
      try {
        const solution = await agents.solver.run(task, { sandbox: solverBox });
        if (!solution.ok) throw new EnvError(`the solver failed (${describeFailure(solution)}), so it was not judged`);
        let artifacts: ArtifactReport | undefined;
        // The solver's turn is over: every process it started dies before the judge's sandbox
        // exists (a leftover must not rewrite the trace, the artifacts or the judge's files).
        await killSolverProcesses(solverBox, mode);
        if (mode === 'shared') {
          judgeBox = solverBox;
        } else {
          judgeBox = await agents.solver.provision(task);
          artifacts = await restoreArtifacts({ from: solverBox, to: judgeBox, declared: task.data.artifacts ?? [] });
          await solverBox.stop();
        }
        const paths = judgePaths(judgeBox);
        const judging = judgeTask({
          task,
          solution,
          config: options,
          mode,
          paths,
          workdir: judgeBox.workdir,
          ...(artifacts ? { artifacts } : {}),
        });
        await agents.judge.run(judging, { sandbox: judgeBox });
      } finally {
        await solverBox.stop();
        if (judgeBox && judgeBox !== solverBox) await judgeBox.stop();
      }
    },
    finalize: ({ episode, options }) => scoreSolver(episode, options),
  });
}

/** `agentic-judge`: the judge gets a fresh sandbox with only the solver's declared artifacts restored. */
export const agenticJudgeEnv = definition('agentic-judge', 'isolated');

/** `shared-agentic-judge`: the judge enters the solver's sandbox exactly as it was left. */
export const sharedAgenticJudgeEnv = definition('shared-agentic-judge', 'shared');
