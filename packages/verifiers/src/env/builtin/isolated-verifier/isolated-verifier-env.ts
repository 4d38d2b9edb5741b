import { z } from 'zod';
import { EnvError, SandboxError } from '../../../errors/troupe-error.ts';
import type { ExecResult, Sandbox } from '../../../runtime/runtime.ts';
import { Task } from '../../../task/task.ts';
import type { Episode } from '../../../trace/episode.ts';
import { defineEnv, type EnvDefinition } from '../../env.ts';
import { type ArtifactReport, restoreArtifacts } from '../agentic-judge/artifacts.ts';

/** Bytes of the verifier's stdout and of its stderr kept on the solver's trace. */
export const VERIFIER_OUTPUT_BYTES = 64 * 1024;

/** Options of `isolated-verifier` (keys of `[env]`). */
export const IsolatedVerifierOptionsSchema = z
  .object({
    /** Shell command run in the verifier's sandbox (in its workdir); exit 0 scores 1, anything else 0. */
    command: z.string().min(1),
    /**
     * Host directory of the hidden verifier files, uploaded into the verifier's sandbox only;
     * `{task}` is replaced by the task's key (one directory per task). A task's own
     * `verifier.files` wins.
     */
    files: z.string().min(1).optional(),
    /** Where the hidden files go in the verifier's sandbox (default `/verifier`). */
    target: z.string().startsWith('/').default('/verifier'),
    /** Image of the verifier's sandbox (default: the task's). */
    image: z.string().min(1).optional(),
    /** Milliseconds the verifier command may run (default 10 min). */
    timeoutMs: z.number().int().positive().default(600_000),
    /** Attempts after a sandbox failure (creation, staging, exec); a failing verdict is never retried. */
    verifierRetries: z.number().int().min(0).max(5).default(1),
    /** Multiplies the weights of the taskset's own rewards on the solver's trace (default 0: only the verifier counts). */
    taskWeight: z.number().min(0).default(0),
    /** Weight of the `verifier` reward. */
    verifierWeight: z.number().min(0).default(1),
  })
  .strict();
/** The options of `isolated-verifier` after parsing; see {@link IsolatedVerifierOptionsSchema}. */
export type IsolatedVerifierOptions = z.output<typeof IsolatedVerifierOptionsSchema>;

/** What the solver's trace carries in `info.verifier`. */
export interface VerifierInfo {
  exitCode: number;
  timedOut: boolean;
  /** The verifier's stdout / stderr, at most {@link VERIFIER_OUTPUT_BYTES} each. */
  stdout: string;
  stderr: string;
  attempts: number;
  artifacts: ArtifactReport;
}

/** What a {@link StageVerifier} hook receives: the fresh verifier sandbox, after the artifacts were restored. */
export interface StageVerifierContext {
  task: Task;
  sandbox: Sandbox;
  /** The host directory of hidden files for this task, when one is configured. */
  files: string | undefined;
  target: string;
}

/** Custom staging of the verifier's sandbox (instead of uploading `files` to `target`). */
export type StageVerifier = (context: StageVerifierContext) => Promise<void>;

/** The task's own verifier settings (`verifier = { files, command }` in its data), kept out of the solver's task. */
const TaskVerifierSchema = z.object({ files: z.string().min(1).optional(), command: z.string().min(1).optional() }).strict();

function taskVerifier(task: Task): z.infer<typeof TaskVerifierSchema> {
  const raw = (task.data as { verifier?: unknown }).verifier;
  if (raw === undefined) return {};
  const parsed = TaskVerifierSchema.safeParse(raw);
  if (!parsed.success) throw new EnvError(`task ${task.key}: verifier: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/**
 * The task the solver sees: the same data without `verifier` (its hidden files' location and
 * command never reach the solver's prompt, sandbox or trace), the same rewards and hooks.
 */
function solverTask(task: Task): Task {
  if ((task.data as { verifier?: unknown }).verifier === undefined) return task;
  const { verifier: _hidden, ...data } = task.data as Record<string, unknown>;
  return new Task(data as Task['data'], {
    key: task.key,
    type: task.type,
    rewards: task.rewards,
    metrics: task.metrics,
    needsContainer: task.needsContainer,
    tools: task.tools,
    ...(task.setup && { setup: task.setup.bind(task) }),
    ...(task.finalize && { finalize: task.finalize.bind(task) }),
  });
}

const clip = (text: string) =>
  Buffer.byteLength(text) <= VERIFIER_OUTPUT_BYTES
    ? text
    : `${Buffer.from(text).subarray(0, VERIFIER_OUTPUT_BYTES).toString('utf8')}\n[… cut at ${VERIFIER_OUTPUT_BYTES} bytes]`;

type VerifierEnvDefinition = EnvDefinition<'solver', IsolatedVerifierOptions>;

/**
 * Builds the `isolated-verifier` env: the solver works in its sandbox; its declared artifacts
 * (`task.data.artifacts`, plus `/logs/artifacts`) are copied into a fresh verifier sandbox of the
 * solver's runtime together with the task's hidden verifier files; the verifier command's exit
 * code is the `verifier` reward (1 for 0, else 0), its stdout / stderr go on the solver's trace
 * (`info.verifier`). The hidden files are read from the host only after the solver's sandbox is
 * gone from the picture: they are never in the solver's sandbox, prompt or trace. A sandbox
 * failure is retried `verifierRetries` times; a failed verifier leaves the reward null, never 0.
 */
export function createIsolatedVerifierEnv(
  hooks: {
    /** The env id (default `isolated-verifier`; a package made with `troupe init env --template isolated-verifier` sets its own). */
    id?: string;
    description?: string;
    stageVerifier?: StageVerifier;
  } = {},
): VerifierEnvDefinition {
  return defineEnv({
    id: hooks.id ?? 'isolated-verifier',
    description:
      hooks.description ??
      "A solver runs the task; its declared artifacts and the task's hidden verifier files are staged into a fresh sandbox where the verifier command's exit code is the reward.",
    roles: { solver: {} },
    options: IsolatedVerifierOptionsSchema as unknown as z.ZodType<IsolatedVerifierOptions>,
    maxConcurrentAgents: 1,
    async run({ task, agents, options }) {
      const own = taskVerifier(task);
      const solving = solverTask(task);
      const solverBox = await agents.solver.provision(solving);
      try {
        const solution = await agents.solver.run(solving, { sandbox: solverBox });
        if (!solution.ok) return;
        // Everything the solver started dies before its artifacts are read.
        if (solverBox.killAll) await solverBox.killAll();
        const files = (own.files ?? options.files)?.replaceAll('{task}', task.key);
        const command = own.command ?? options.command;
        const verifying = options.image ? solving.with({ image: options.image }) : solving;
        let lastError: unknown;
        for (let attempt = 1; attempt <= options.verifierRetries + 1; attempt++) {
          try {
            const { result, artifacts } = await verifyOnce({
              task: verifying,
              solverBox,
              agents,
              files,
              command,
              options,
              hooks,
            });
            const info: VerifierInfo = {
              exitCode: result.exitCode,
              timedOut: result.timedOut,
              stdout: clip(result.stdout),
              stderr: clip(result.stderr),
              attempts: attempt,
              artifacts,
            };
            solution.info.verifier = info;
            return;
          } catch (error) {
            lastError = error;
            if (!SandboxError.isInstance(error)) break;
          }
        }
        // The episode records the error; the solver's verifier reward is null, never 0.
        solution.rewards.verifier = null;
        throw new EnvError(`the verifier failed: ${(lastError as Error).message ?? String(lastError)}`, { cause: lastError });
      } finally {
        await solverBox.stop();
      }
    },
    finalize: ({ episode, options }) => scoreSolver(episode, options),
  });
}

/** One verification: a fresh sandbox, the artifacts, the hidden files, the command; the sandbox is always stopped. */
async function verifyOnce(run: {
  task: Task;
  solverBox: Sandbox;
  agents: Parameters<VerifierEnvDefinition['run']>[0]['agents'];
  files: string | undefined;
  command: string;
  options: IsolatedVerifierOptions;
  hooks: { stageVerifier?: StageVerifier };
}): Promise<{ result: ExecResult; artifacts: ArtifactReport }> {
  const verifierBox = await run.agents.solver.provision(run.task);
  try {
    const artifacts = await restoreArtifacts({ from: run.solverBox, to: verifierBox, declared: run.task.data.artifacts ?? [] });
    if (run.hooks.stageVerifier) {
      await run.hooks.stageVerifier({ task: run.task, sandbox: verifierBox, files: run.files, target: run.options.target });
    } else if (run.files) {
      await verifierBox.upload(run.files, run.options.target);
    }
    const result = await verifierBox.exec(run.command, { timeoutMs: run.options.timeoutMs });
    return { result, artifacts };
  } finally {
    await verifierBox.stop();
  }
}

/** The `verifier` reward on the solver's trace (null when the verifier never ran), the taskset's own rewards weighted by `taskWeight`. */
function scoreSolver(episode: Episode, options: IsolatedVerifierOptions): void {
  const solver = episode.traces.find((trace) => trace.agent.name === 'solver');
  if (!solver) return;
  for (const reward of Object.values(solver.rewards)) if (reward) reward.weight *= options.taskWeight;
  const info = solver.info.verifier as VerifierInfo | undefined;
  if (!info) {
    solver.rewards.verifier = null;
    return;
  }
  const score = info.exitCode === 0 && !info.timedOut ? 1 : 0;
  solver.recordMetric('verifier/passed', score);
  solver.recordReward('verifier', score, options.verifierWeight);
}

/** `isolated-verifier`: hidden verifier files graded in a fresh sandbox the solver never saw. */
export const isolatedVerifierEnv = createIsolatedVerifierEnv();
