import { existsSync, readdirSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pino from 'pino';
import type { ClientConfig } from '../agent/agent-config.ts';
import type { Env } from '../env/env.ts';
import { ConfigError, TimeoutError } from '../errors/troupe-error.ts';
import { type EvalConfig, readConfigFile } from '../eval/eval-config.ts';
import { type EvalResult, runDirName, runEval, writeFileAtomic } from '../eval/eval-runner.ts';
import { goldScores, noopScores } from '../eval/noop-check.ts';
import { createEvalEnv, type ResolvedEnvConfig, resolveEnvConfig } from '../eval/resolve-env.ts';
import { formatSummary } from '../eval/summary.ts';
import { lazyInterceptionServer } from '../interception/interception-server.ts';
import { makeClient } from '../model/make-client.ts';
import type { OpenAICompatibleClient } from '../model/openai-client.ts';
import { preflightRuntimes } from '../runtime/preflight.ts';
import { selectTasks, type TaskSelection } from '../task/select.ts';
import type { Taskset } from '../task/taskset.ts';
import { assertRunToolsServable } from '../tools/mcp-server.ts';
import { snakeConfigKeys } from '../util/config-keys.ts';
import { type BuiltConfig, buildConfig } from './eval-args.ts';
import { EXIT_CODES, HELP } from './help.ts';
import { progressReporter } from './progress.ts';

/**
 * `troupe eval` (and `troupe validate` when `validateOnly`): everything that can be refused is
 * checked before the run directory exists; then the run, its summary and an exit code.
 */
export async function evalCommand(args: string[], validateOnly: boolean): Promise<number> {
  const built = buildConfig(args);
  if (built.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const { config, roleFlags, resumeDir, changesOnResume } = built;
  const resolved = await resolveEnvConfig({ config, roleFlags });
  if (resumeDir && changesOnResume) assertResumeUnchanged(resumeDir, resolved.cleanConfig);
  // Started on first need; concurrent first episodes share one started server.
  const interception = lazyInterceptionServer();
  const runLog = runLogger(validateOnly);
  const clients: OpenAICompatibleClient[] = [];
  const makeTrackedClient = (clientConfig: ClientConfig, model: string) => {
    const client = makeClient(clientConfig, model);
    clients.push(client);
    return client;
  };
  const { env, taskset } = await createEvalEnv({
    resolved,
    config,
    makeClient: makeTrackedClient,
    interception: interception.get,
    log: runLog.log,
  });
  assertToolsServable(config, env, taskset);
  if ((built.onlyNoop || built.onlyGold) && !validateOnly)
    throw new ConfigError(`--only-${built.onlyNoop ? 'noop' : 'gold'} is a troupe validate flag`);
  if (built.onlyNoop && built.onlyGold) throw new ConfigError('--only-noop and --only-gold: choose one');
  if (validateOnly && (built.onlyNoop || built.onlyGold))
    return printTaskChecks({ env, taskset, numTasks: config.numTasks, select: config.select, gold: built.onlyGold === true });
  if (validateOnly) {
    printResolved(resolved.cleanConfig, env, taskset);
    return 0;
  }
  const { runDir, clean, dryRun } = built;
  if (runDir && !clean && existsSync(runDir) && readdirSync(runDir).length > 0) {
    throw new ConfigError(`--run-dir ${runDir} exists and is not empty (--clean replaces it; --resume ${runDir} continues it)`);
  }
  if (dryRun) {
    printDryRun(built, resolved.cleanConfig, env, taskset);
    return 0;
  }
  if (built.preflight) {
    await preflightRuntimes([env]);
    await Promise.all(clients.map((client) => client.preflight()));
  }
  const outDir = await prepareRunDir(built, resolved);
  runLog.attach(
    pino({ level: 'info' }, pino.destination({ dest: join(await ensureDir(join(outDir, 'logs')), 'eval.log'), sync: true })),
  );
  return runEpisodes({ built, cleanConfig: resolved.cleanConfig, env, taskset, outDir, log: runLog.log, interception });
}

/** Runs the episodes into `outDir` with a progress line and Ctrl-C handling; the exit code. */
async function runEpisodes(options: {
  built: BuiltConfig;
  cleanConfig: ResolvedEnvConfig['cleanConfig'];
  env: Env;
  taskset: Taskset;
  outDir: string;
  log: (line: string, options?: { fileOnly?: boolean }) => void;
  interception: ReturnType<typeof lazyInterceptionServer>;
}): Promise<number> {
  const { built, env, taskset, outDir, log, interception } = options;
  const { config } = built;
  const controller = new AbortController();
  const stopListening = interruptOnSigint(controller);
  const progress = progressReporter({ stream: process.stderr, label: `${config.env.id} ${config.model}` });
  try {
    const result = await runEval({
      env,
      taskset,
      ...(config.numTasks !== undefined ? { numTasks: config.numTasks } : {}),
      ...(config.select ? { select: config.select } : {}),
      rollouts: config.rollouts,
      concurrency: config.concurrency,
      outDir,
      resume: built.resumeDir !== undefined,
      config: options.cleanConfig,
      model: config.model,
      passThreshold: config.passThreshold,
      ...(config.prices ? { prices: config.prices } : {}),
      onProgress: progress.update,
      log,
      signal: controller.signal,
      ...(built.shard ? { shard: built.shard } : {}),
    });
    progress.done();
    return reportRun(result, outDir, { interrupted: controller.signal.aborted, allowFailures: built.allowFailures });
  } finally {
    stopListening();
    await interception.close();
  }
}

/** `--resume` with flags or a config file: refused when they change the run's saved `config.json`. */
function assertResumeUnchanged(resumeDir: string, cleanConfig: ResolvedEnvConfig['cleanConfig']): void {
  const saved = readConfigFile(join(resumeDir, 'config.json'));
  const difference = firstDifference(saved, JSON.parse(JSON.stringify(cleanConfig)));
  if (difference !== undefined) {
    throw new ConfigError(
      `--resume ${resumeDir}: ${difference} differs from the run's config.json; resume with --resume alone, or start a new run`,
    );
  }
}

/**
 * The run's log: lines go to stderr (unless a progress bar owns a TTY, and always for `validate`)
 * and, once the run directory exists, to `logs/eval.log` through `attach`.
 */
function runLogger(validateOnly: boolean) {
  let logger: pino.Logger | undefined;
  return {
    log: (line: string, options?: { fileOnly?: boolean }) => {
      logger?.info(line);
      if (options?.fileOnly) return;
      if (!process.stderr.isTTY || validateOnly) process.stderr.write(`${line}\n`);
    },
    attach: (fileLogger: pino.Logger) => {
      logger = fileLogger;
    },
  };
}

/** A task that declares tools and no role that could serve them: refused before any episode runs. */
function assertToolsServable(config: EvalConfig, env: Env, taskset: Taskset): void {
  if (taskset.isInfinite && config.numTasks === undefined && config.select?.indices === undefined) return;
  assertRunToolsServable({
    env: env.id,
    taskset: taskset.id,
    roles: Object.fromEntries(Object.entries(env.baseAgents).map(([role, agent]) => [role, agent.harness])),
    tasks: selectTasks(taskset, config.select, config.numTasks),
  });
}

/** The resolved config, the roles and the taskset, as JSON (`validate` and `--dry-run`). */
function printResolved(cleanConfig: ResolvedEnvConfig['cleanConfig'], env: Env, taskset: Taskset): void {
  process.stdout.write(
    `${JSON.stringify({ ...cleanConfig, roles: env.describeRoles(), taskset: { id: taskset.id, size: taskset.size } }, null, 2)}\n`,
  );
}

function printDryRun(built: BuiltConfig, cleanConfig: ResolvedEnvConfig['cleanConfig'], env: Env, taskset: Taskset): void {
  const { config, shard, runDir, clean, resumeDir } = built;
  const tasks = selectTasks(taskset, config.select, config.numTasks).length;
  printResolved(cleanConfig, env, taskset);
  process.stdout.write(
    `dry run: ${tasks} tasks × ${config.rollouts} rollouts = ${tasks * config.rollouts} episodes${shard ? ' (this shard runs its slice of them)' : ''}` +
      `${runDir ? ` → ${runDir}${clean && existsSync(runDir) ? ' (would be replaced)' : ''}` : resumeDir ? ` → ${resumeDir} (resumed)` : ''}; nothing was called or created\n`,
  );
}

/**
 * The run directory: the resumed one, `--run-dir` (emptied first with `--clean`) or a new one under
 * `outputs`. A new one is born with its config, so a kill at any point leaves a resumable run.
 */
async function prepareRunDir(built: BuiltConfig, resolved: ResolvedEnvConfig): Promise<string> {
  const { config, resumeDir, runDir, clean } = built;
  if (runDir && clean) rmSync(runDir, { recursive: true, force: true });
  const outDir =
    resumeDir ??
    runDir ??
    join(
      config.outputs,
      runDirName({
        env: resolved.definition.id,
        model: config.model,
        harness: harnessName(resolved.envConfig, resolved.definition.roles),
      }),
    );
  if (!resumeDir) {
    await ensureDir(outDir);
    writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(snakeConfigKeys(resolved.cleanConfig), null, 2)}\n`);
  }
  return outDir;
}

/** The first Ctrl-C finishes the episodes in flight; the second quits now. Returns the unsubscribe. */
function interruptOnSigint(controller: AbortController): () => void {
  let interrupted = 0;
  const onSignal = () => {
    interrupted++;
    if (interrupted > 1) process.exit(EXIT_CODES.interrupted);
    process.stderr.write('\ninterrupted: finishing episodes in flight (Ctrl-C again to quit now; --resume continues)\n');
    controller.abort(new TimeoutError('interrupted'));
  };
  process.on('SIGINT', onSignal);
  return () => process.off('SIGINT', onSignal);
}

/** Prints the summary and where the run lives; the exit code follows the failed episodes. */
function reportRun(result: EvalResult, outDir: string, options: { interrupted: boolean; allowFailures: boolean }): number {
  process.stdout.write(`${formatSummary(result.summary)}\n`);
  process.stdout.write(
    `\nrun directory: ${resolve(outDir)}\n  traces:  ${join(outDir, 'traces.jsonl')}\n  summary: ${join(outDir, 'summary.json')}\n  view:    troupe view ${outDir}\n`,
  );
  if (options.interrupted) return EXIT_CODES.interrupted;
  const { episodes, episodesFailed } = result.summary;
  if (episodesFailed > 0 && !options.allowFailures) {
    process.stderr.write(
      `troupe: ${episodesFailed} of ${episodes} episodes failed (errors by type in summary.json; --allow-failures exits 0)\n`,
    );
    return episodesFailed === episodes ? EXIT_CODES.allFailed : EXIT_CODES.someFailed;
  }
  return EXIT_CODES.ok;
}

/** The dotted path of the first field where `a` and `b` differ (`undefined` when equal). */
export function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (Object.is(a, b)) return undefined;
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (!isObject(a) || !isObject(b) || Array.isArray(a) !== Array.isArray(b)) return path || '(the whole config)';
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const key of keys) {
    const found = firstDifference(a[key], b[key], path ? `${path}.${key}` : key);
    if (found !== undefined) return found;
  }
  return undefined;
}

function harnessName(envConfig: Record<string, unknown>, roles: Record<string, { harness?: unknown }>): string {
  const names = Object.keys(roles).map((role) => {
    const pinned = (envConfig[role] as { harness?: unknown } | undefined)?.harness ?? roles[role]?.harness ?? 'bash';
    return typeof pinned === 'string' ? pinned : String((pinned as { id?: string }).id);
  });
  return [...new Set(names)].join('+');
}

async function ensureDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  return path;
}

/**
 * `validate --only-noop` / `--only-gold`: each task scored without an agent run by the env's first
 * role (one JSON line per task on stdout); exit 3 when a task already scores >= 1 with nothing
 * done (its rewards cannot tell a solver from none), or when a gold reply scores below 1.
 */
async function printTaskChecks(options: {
  env: Env;
  taskset: Taskset;
  numTasks: number | undefined;
  select: TaskSelection | undefined;
  gold: boolean;
}): Promise<number> {
  const { env, taskset, numTasks, select, gold } = options;
  const role = env.roles[0];
  const agent = role === undefined ? undefined : env.baseAgents[role];
  if (!agent) throw new ConfigError(`--only-${gold ? 'gold' : 'noop'}: env ${env.id} has no role`);
  const which = { agent, taskset, ...(numTasks !== undefined ? { numTasks } : {}), ...(select ? { select } : {}) };
  const scores = gold ? await goldScores(which) : await noopScores(which);
  for (const score of scores) process.stdout.write(`${JSON.stringify({ role, ...score })}\n`);
  const flagged = scores.filter((score) => ('goldFails' in score ? score.goldFails : score.solvedByNothing));
  const names = flagged.length ? `: ${flagged.map((score) => score.task).join(', ')}` : '';
  if (gold) {
    const missing = scores.filter((score) => 'goldMissing' in score && score.goldMissing).length;
    process.stderr.write(
      `troupe validate --only-gold: ${flagged.length} of ${scores.length} gold repl(ies) score below 1${names}; ${missing} task(s) without gold\n`,
    );
  } else {
    process.stderr.write(
      `troupe validate --only-noop: ${flagged.length} of ${scores.length} task(s) score >= 1 with no agent action${names}\n`,
    );
  }
  return flagged.length > 0 ? EXIT_CODES.someFailed : EXIT_CODES.ok;
}
