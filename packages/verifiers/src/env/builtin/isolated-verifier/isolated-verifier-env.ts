import { z } from 'zod';
import { PluginRefSchema } from '../../../agent/agent-config.ts';
import { EnvError, SandboxError } from '../../../errors/troupe-error.ts';
import type { ExecResult, Runtime, Sandbox, SandboxOptions } from '../../../runtime/runtime.ts';
import { Task } from '../../../task/task.ts';
import type { Episode } from '../../../trace/episode.ts';
import type { Trace } from '../../../trace/trace.ts';
import { sleep } from '../../../util/timeout.ts';
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
    /**
     * The verifier sandbox's own runtime (`verifier_runtime = "docker"` or `{ id = "docker", … }`,
     * its options as a role's `runtime` takes them); default: the solver's runtime.
     */
    verifierRuntime: PluginRefSchema.optional(),
    /** Image of the verifier's sandbox (default: the task's). */
    image: z.string().min(1).optional(),
    /** CPUs of the verifier's sandbox (default: its runtime's). */
    cpu: z.number().positive().optional(),
    /** Memory of the verifier's sandbox in MiB (default: its runtime's). */
    memoryMb: z.number().int().positive().optional(),
    /** Milliseconds the verifier command may run (default 10 min). */
    timeoutMs: z.number().int().positive().default(600_000),
    /**
     * Fresh-sandbox attempts after an infrastructure failure of the verifier (its sandbox's creation,
     * the staging of artifacts and hidden files, the exec); a failing verdict is never retried.
     */
    verifierRetries: z.number().int().min(0).max(5).default(2),
    /** Milliseconds before the first retry, doubled for each next (default 500). */
    verifierBackoffMs: z.number().int().min(0).max(60_000).default(500),
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
  /** Verifier attempts made, the successful one included. */
  attempts: number;
  /** The infrastructure failures of the attempts before it, one message each. */
  failures: string[];
  /** The runtime the verifier's sandbox ran on. */
  runtime: string;
  artifacts: ArtifactReport;
}

/** What the solver's trace carries in `info.verifierFailure` when every verifier attempt failed. */
export interface VerifierFailureInfo {
  attempts: number;
  failures: string[];
  runtime: string;
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
 * (`task.data.artifacts`, plus `/logs/artifacts`) are copied into a fresh verifier sandbox — of
 * `verifier_runtime` when set (its own runtime, image, cpu, memory), else of the solver's runtime —
 * together with the task's hidden verifier files; the verifier command's exit code is the
 * `verifier` reward (1 for 0, else 0), its stdout / stderr go on the solver's trace
 * (`info.verifier`, with the attempts and the runtime). The hidden files are read from the host
 * only after the solver's sandbox is gone from the picture: they are never in the solver's
 * sandbox, prompt or trace. An infrastructure failure is retried `verifier_retries` times in a
 * fresh sandbox (upstream verifiers' `IsolatedVerifierEnv`, `verifiers/v1/envs/isolated_verifier/
 * env.py:29-39,104-145` at 2723f04); a failed verifier leaves the reward null, never 0, and its
 * attempts on `info.verifierFailure`.
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
    runtimes: (options) => ({ verifierRuntime: options.verifierRuntime }),
    async run({ task, agents, options, runtimes }) {
      const own = taskVerifier(task);
      const solving = solverTask(task);
      const solverBox = await agents.solver.provision(solving);
      try {
        const solution = await agents.solver.run(solving, { sandbox: solverBox });
        if (!solution.ok) return;
        // Everything the solver started dies before its artifacts are read.
        if (solverBox.killAll) await solverBox.killAll();
        const runtime = runtimes.verifierRuntime ?? agents.solver.agent.runtime;
        const outcome = await verifyWithRetries({
          verification: {
            task: solving,
            solverBox,
            runtime,
            spec: verifierSandboxSpec(solving, options),
            files: (own.files ?? options.files)?.replaceAll('{task}', task.key),
            command: own.command ?? options.command,
            options,
            hooks,
          },
          options,
        });
        recordOutcome(solution, outcome, runtime.id);
      } finally {
        await solverBox.stop();
      }
    },
    finalize: ({ episode, options }) => scoreSolver(episode, options),
  });
}

/**
 * The verification's outcome on the solver's trace: `info.verifier` after a verdict; after every
 * attempt failed, `info.verifierFailure`, a null reward (never 0) and an `EnvError` for the episode.
 */
function recordOutcome(solution: Trace, outcome: VerificationOutcome, runtime: string): void {
  if ('result' in outcome) {
    const info: VerifierInfo = {
      exitCode: outcome.result.exitCode,
      timedOut: outcome.result.timedOut,
      stdout: clip(outcome.result.stdout),
      stderr: clip(outcome.result.stderr),
      attempts: outcome.failures.length + 1,
      failures: outcome.failures,
      runtime,
      artifacts: outcome.artifacts,
    };
    solution.info.verifier = info;
    return;
  }
  const failure: VerifierFailureInfo = { attempts: outcome.failures.length, failures: outcome.failures, runtime };
  solution.info.verifierFailure = failure;
  solution.rewards.verifier = null;
  const last = outcome.error;
  throw new EnvError(`the verifier failed after ${failure.attempts} attempt(s): ${(last as Error).message ?? String(last)}`, {
    cause: last,
  });
}

/** The verifier sandbox's options: the task's image and workdir, the env's `image`, `cpu`, `memoryMb` over them. */
function verifierSandboxSpec(task: Task, options: IsolatedVerifierOptions): SandboxOptions {
  const spec: SandboxOptions = {};
  const image = options.image ?? task.data.image;
  if (image) spec.image = image;
  if (task.data.workdir) spec.workdir = task.data.workdir;
  if (options.cpu !== undefined) spec.cpu = options.cpu;
  if (options.memoryMb !== undefined) spec.memoryMb = options.memoryMb;
  return spec;
}

/** A verdict with the failures of the attempts before it, or the last error once every attempt failed. */
type VerificationOutcome =
  | { result: ExecResult; artifacts: ArtifactReport; failures: string[] }
  | { error: unknown; failures: string[] };

/** What one verification needs. */
interface Verification {
  task: Task;
  solverBox: Sandbox;
  runtime: Runtime;
  spec: SandboxOptions;
  files: string | undefined;
  command: string;
  options: IsolatedVerifierOptions;
  hooks: { stageVerifier?: StageVerifier };
}

/**
 * Up to `verifierRetries` + 1 verifications, each in a fresh sandbox, waiting `verifierBackoffMs`
 * (doubled each time) between them: an infrastructure failure (`SandboxError`) is retried, anything
 * else (the user's staging hook throwing a plain error) ends the attempts. A verdict, pass or fail,
 * is never retried.
 */
async function verifyWithRetries(run: {
  verification: Verification;
  options: IsolatedVerifierOptions;
}): Promise<{ result: ExecResult; artifacts: ArtifactReport; failures: string[] } | { error: unknown; failures: string[] }> {
  const failures: string[] = [];
  for (let attempt = 1; ; attempt++) {
    try {
      return { ...(await verifyOnce(run.verification)), failures };
    } catch (error) {
      failures.push(clip((error as Error).message ?? String(error)));
      if (!SandboxError.isInstance(error) || attempt > run.options.verifierRetries) return { error, failures };
      await sleep(run.options.verifierBackoffMs * 2 ** (attempt - 1));
    }
  }
}

/** One verification: a fresh sandbox, the artifacts, the hidden files, the command; the sandbox is always stopped. */
async function verifyOnce(run: Verification): Promise<{ result: ExecResult; artifacts: ArtifactReport }> {
  let verifierBox: Sandbox;
  try {
    verifierBox = await run.runtime.createSandbox(run.spec);
  } catch (error) {
    throw SandboxError.isInstance(error)
      ? error
      : new SandboxError(`the verifier's ${run.runtime.id} sandbox was not created: ${(error as Error).message}`, {
          cause: error,
        });
  }
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
