import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { ClientConfig } from '../agent/agent-config.ts';
import { setPluginEnvironment, setPluginSearchPaths } from '../agent/plugins.ts';
import { ConfigError, TroupeError } from '../errors/troupe-error.ts';
import { runDirName, runEval, writeFileAtomic } from '../eval/eval-runner.ts';
import { parseShard, type Shard } from '../eval/shard.ts';
import { formatSummary } from '../eval/summary.ts';
import { lazyInterceptionServer } from '../interception/interception-server.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { assertRunToolsServable } from '../tools/mcp-server.ts';
import { deepMerge, type EvalConfig, parseEvalConfig, parseValue, readConfigFile, setPath } from './eval-config.ts';
import { progressReporter } from './progress.ts';
import { createEvalEnv, hasRoleFlags, type RoleFlags, resolveEnvConfig } from './resolve-env.ts';

const HELP = `troupe — run agents on tasksets, record trainable traces

Usage:
  troupe eval [options]            run an env on a taskset against a model endpoint
  troupe validate [options]        check a config and print it resolved (no model calls)
  troupe view <run-dir> [--html FILE] [--port N]
                                   browse a run's episodes (or write one self-contained HTML file)
  troupe view <folder> | <run-a> <run-b> --html FILE
                                   list a folder's runs and compare two (per role, task by task)
  troupe export <run-dir> --format chat|sft|preference [--role R] [--where EXPR] [--tokens] [-o FILE]
                                   traces as JSONL for TRL (troupe export --help)
  troupe merge <run-dir>... --out DIR
                                   merge shard runs (eval --shard i/n) into one run
  troupe replay <run-dir> [--config FILE] [--num-rescores K]
                                   re-score saved traces with the same or new rewards and judges
  troupe init env|harness|runtime <name> [--dir D]
                                   scaffold a package of your own env, harness or runtime (troupe init --help)
  troupe rerun <run-dir> --swap ROLE=MODEL [-b URL]
                                   re-run a run's tasks with one seat swapped; paired reward change per role
  troupe debug --env ID|MODULE --task I [-f FILE] -- COMMAND...
                                   run a command in task I's sandbox, booted as eval would (troupe debug --help)

Eval options:
  -f, --config FILE      TOML or JSON config; CLI options override it
  -m, --model NAME       model name (required unless in the config)
  -b, --base-url URL     OpenAI-compatible endpoint (default http://127.0.0.1:8000/v1)
      --api-key-var NAME environment variable holding the API key (default OPENAI_API_KEY)
  -e, --env ID           env id (default single-agent)
  -t, --taskset ID|FILE  taskset id (default arithmetic) or a .jsonl file
  -n, --num-tasks N      tasks to run
  -r, --rollouts N       episodes per task (default 1)
  -c, --concurrency N    episodes at once (default 32)
      --harness ID       harness for every role (e.g. bash, null, claude_code)
      --runtime ID       runtime for every role (e.g. local, docker)
      --temperature X    sampling temperature
      --top-p X, --top-k N, --min-p X, --seed N, --stop TEXT (repeatable), --reasoning-effort LEVEL
                         more sampling settings (provider pass-through: --set sampling.extra.KEY=VALUE)
      --max-tokens N     max tokens per call
      --max-turns N      max model calls per agent run
  -o, --outputs DIR      root of run directories (default outputs)
      --resume DIR       continue a run: keep its complete episodes, run the rest (refused
                         when another flag or config changes the run's config.json)
      --allow-failures   exit 0 even when episodes failed
      --shard I/N        run only shard I of N (1-based) of tasks × rollouts; troupe merge joins them
      --no-preflight     skip the endpoint check (GET <base-url>/models) made before a run
      --dry-run          print the resolved config and the task count; call nothing, create nothing
      --run-dir DIR      write the run to DIR instead of <outputs>/<env>--<model>--<harness>--<hex>
      --clean            replace --run-dir DIR when it exists (refused with --resume)
  -s, --set PATH=VALUE   set any config field, e.g. --set env.agent.maxTurns=4 (repeatable)
  -h, --help

View options:
      --html FILE        write one self-contained HTML file instead of serving
      --port N           port to serve on (default: a free one)
      --host ADDR        address to bind (default 127.0.0.1)

Exit codes:
  0  every episode ok (or --allow-failures)     2  bad config or flag (nothing was run)
  3  some episodes failed                        4  every episode failed
  1  an internal error                           130 interrupted (--resume continues)
`;

/** Exit codes of `troupe eval` (documented in --help and the README). */
export const EXIT_CODES = { ok: 0, internal: 1, config: 2, someFailed: 3, allFailed: 4, interrupted: 130 } as const;

async function main(argv: string[]): Promise<number> {
  setPluginSearchPaths([process.cwd()]);
  setPluginEnvironment(process.env);
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (command === 'eval' || command === 'validate') return evalCommand(rest, command === 'validate');
  if (command === 'view') return (await import('../viewer/view-command.ts')).viewCommand({ args: rest, help: HELP });
  if (command === 'export') return (await import('./export-command.ts')).exportCommand(rest);
  if (command === 'merge') return (await import('./merge-command.ts')).mergeCommand(rest);
  if (command === 'replay') return (await import('./replay-command.ts')).replayCommand(rest);
  if (command === 'init') return (await import('./init-command.ts')).initCommand(rest);
  if (command === 'debug') return (await import('./debug-command.ts')).debugCommand(rest);
  if (command === 'rerun') return (await import('./rerun-command.ts')).rerunCommand(rest, (args) => evalCommand(args, false));
  process.stderr.write(`troupe: unknown command ${JSON.stringify(command)}\n\n${HELP}`);
  return 2;
}

interface BuiltConfig {
  config: EvalConfig;
  /** `--harness`, `--runtime`, `--max-turns`: applied to every role of the env. */
  roleFlags: RoleFlags;
  resumeDir?: string;
  /** Flags or a config file were given beside `--resume`. */
  changesOnResume: boolean;
  allowFailures: boolean;
  preflight: boolean;
  help: boolean;
  shard?: Shard;
  dryRun?: boolean;
  clean?: boolean;
  runDir?: string;
}

function buildConfig(args: string[]): BuiltConfig {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string', short: 'f' },
      model: { type: 'string', short: 'm' },
      'base-url': { type: 'string', short: 'b' },
      'api-key-var': { type: 'string' },
      env: { type: 'string', short: 'e' },
      taskset: { type: 'string', short: 't' },
      'num-tasks': { type: 'string', short: 'n' },
      rollouts: { type: 'string', short: 'r' },
      concurrency: { type: 'string', short: 'c' },
      harness: { type: 'string' },
      runtime: { type: 'string' },
      temperature: { type: 'string' },
      'top-p': { type: 'string' },
      'top-k': { type: 'string' },
      'min-p': { type: 'string' },
      seed: { type: 'string' },
      stop: { type: 'string', multiple: true },
      'reasoning-effort': { type: 'string' },
      'max-tokens': { type: 'string' },
      'max-turns': { type: 'string' },
      outputs: { type: 'string', short: 'o' },
      resume: { type: 'string' },
      'allow-failures': { type: 'boolean' },
      shard: { type: 'string' },
      'no-preflight': { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      clean: { type: 'boolean' },
      'run-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      set: { type: 'string', short: 's', multiple: true },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help)
    return {
      config: {} as EvalConfig,
      roleFlags: {},
      changesOnResume: false,
      allowFailures: false,
      preflight: false,
      help: true,
    };
  let raw: Record<string, unknown> = {};
  if (values.resume) {
    const saved = join(values.resume, 'config.json');
    if (!existsSync(saved)) throw new ConfigError(`--resume ${values.resume}: no config.json there (is it a run directory?)`);
    raw = readConfigFile(saved);
  }
  if (values.config) raw = deepMerge(raw, readConfigFile(values.config));
  const int = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0)
      throw new ConfigError(`--${name} must be a positive integer, got ${JSON.stringify(text)}`);
    return n;
  };
  const num = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isFinite(n)) throw new ConfigError(`--${name} must be a number, got ${JSON.stringify(text)}`);
    return n;
  };
  const overrides: [string, unknown][] = [
    ['model', values.model],
    ['client.baseUrl', values['base-url']],
    ['client.apiKeyVar', values['api-key-var']],
    ['env.id', values.env],
    ['env.taskset', values.taskset],
    ['numTasks', int('num-tasks', values['num-tasks'])],
    ['rollouts', int('rollouts', values.rollouts)],
    ['concurrency', int('concurrency', values.concurrency)],
    ['sampling.temperature', num('temperature', values.temperature)],
    ['sampling.topP', num('top-p', values['top-p'])],
    ['sampling.topK', num('top-k', values['top-k'])],
    ['sampling.minP', num('min-p', values['min-p'])],
    ['sampling.seed', num('seed', values.seed)],
    ['sampling.stop', values.stop],
    ['sampling.reasoningEffort', values['reasoning-effort']],
    ['sampling.maxTokens', int('max-tokens', values['max-tokens'])],
    ['outputs', values.outputs],
  ];
  for (const [path, value] of overrides) if (value !== undefined) setPath(raw, path, value);
  for (const entry of values.set ?? []) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--set ${entry}: expected PATH=VALUE`);
    setPath(raw, entry.slice(0, eq), parseValue(entry.slice(eq + 1)));
  }
  if (raw.client && typeof raw.client === 'object' && !('baseUrl' in raw.client)) {
    (raw.client as Record<string, unknown>).baseUrl = 'http://127.0.0.1:8000/v1';
  }
  raw.env ??= {};
  const env = raw.env as Record<string, unknown>;
  env.id ??= 'single-agent';
  const roleFlags: RoleFlags = {
    ...(values.harness !== undefined ? { harness: values.harness } : {}),
    ...(values.runtime !== undefined ? { runtime: values.runtime } : {}),
    ...(values['max-turns'] !== undefined ? { maxTurns: int('max-turns', values['max-turns']) } : {}),
  };
  const config = parseEvalConfig(raw);
  const changesOnResume =
    values.config !== undefined ||
    (values.set?.length ?? 0) > 0 ||
    overrides.some(([, v]) => v !== undefined) ||
    hasRoleFlags(roleFlags);
  return {
    config,
    roleFlags,
    ...(values.resume ? { resumeDir: values.resume } : {}),
    changesOnResume,
    allowFailures: values['allow-failures'] === true,
    preflight: values['no-preflight'] !== true,
    help: false,
    ...(values.shard !== undefined ? { shard: parseShard(values.shard) } : {}),
    ...runHygiene(values),
  };
}

/** `--dry-run`, `--run-dir`, `--clean` (issue 17 item 7); contradictory combinations are refused. */
function runHygiene(values: { 'dry-run'?: boolean; clean?: boolean; 'run-dir'?: string; resume?: string }) {
  if (values.clean && values.resume) throw new ConfigError('--clean replaces a run and --resume continues one: choose one');
  if (values.clean && !values['run-dir']) throw new ConfigError('--clean replaces the directory named by --run-dir DIR');
  if (values['run-dir'] && values.resume) throw new ConfigError('--run-dir names a new run; --resume DIR already names the run');
  return {
    dryRun: values['dry-run'] === true,
    clean: values.clean === true,
    ...(values['run-dir'] ? { runDir: values['run-dir'] } : {}),
  };
}

/** Builds an OpenAI-compatible client; the API key is read here, at the CLI layer, and nowhere else. */
function makeClient(config: ClientConfig, model: string): OpenAICompatibleClient {
  // `-b URL` builds a client table without apiKeyVar: the documented default still applies.
  const apiKey = process.env[config.apiKeyVar ?? 'OPENAI_API_KEY'];
  return new OpenAICompatibleClient({
    baseUrl: config.baseUrl,
    apiKey: apiKey ?? 'EMPTY',
    model,
    ...(config.headers ? { headers: config.headers } : {}),
    retry: { maxRetries: config.maxRetries },
    ...(config.timeoutMs ? { timeoutMs: config.timeoutMs } : {}),
  });
}

async function evalCommand(args: string[], validateOnly: boolean): Promise<number> {
  const { config, roleFlags, resumeDir, changesOnResume, allowFailures, preflight, help, shard, dryRun, clean, runDir } =
    buildConfig(args);
  if (help) {
    process.stdout.write(HELP);
    return 0;
  }
  const resolved = await resolveEnvConfig({ config, roleFlags });
  const { definition, envConfig, cleanConfig } = resolved;
  if (resumeDir && changesOnResume) {
    const saved = readConfigFile(join(resumeDir, 'config.json'));
    const difference = firstDifference(saved, JSON.parse(JSON.stringify(cleanConfig)));
    if (difference !== undefined) {
      throw new ConfigError(
        `--resume ${resumeDir}: ${difference} differs from the run's config.json; resume with --resume alone, or start a new run`,
      );
    }
  }
  // Started on first need; concurrent first episodes share one started server.
  const interception = lazyInterceptionServer();
  // Everything that can be rejected at the door is checked before the run directory exists.
  let logger: pino.Logger | undefined;
  const log = (line: string, options?: { fileOnly?: boolean }) => {
    logger?.info(line);
    if (options?.fileOnly) return;
    if (!process.stderr.isTTY || validateOnly) process.stderr.write(`${line}\n`);
  };
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
    log,
  });
  // A task that declares tools and no role that could serve them: refused before any episode runs.
  const runTasks = Math.min(config.numTasks ?? taskset.size, taskset.size);
  if (Number.isFinite(runTasks)) {
    assertRunToolsServable({
      env: env.id,
      taskset: taskset.id,
      roles: Object.fromEntries(Object.entries(env.baseAgents).map(([role, agent]) => [role, agent.harness])),
      tasks: Array.from({ length: runTasks }, (_, i) => taskset.at(i)),
    });
  }
  if (validateOnly) {
    process.stdout.write(
      `${JSON.stringify({ ...cleanConfig, roles: env.describeRoles(), taskset: { id: taskset.id, size: taskset.size } }, null, 2)}\n`,
    );
    return 0;
  }
  if (runDir && !clean && existsSync(runDir) && readdirSync(runDir).length > 0) {
    throw new ConfigError(`--run-dir ${runDir} exists and is not empty (--clean replaces it; --resume ${runDir} continues it)`);
  }
  if (dryRun) {
    const tasks = config.numTasks !== undefined ? Math.min(config.numTasks, taskset.size) : taskset.size;
    if (!Number.isFinite(tasks)) throw new ConfigError(`taskset ${taskset.id} is infinite: set numTasks (-n)`);
    process.stdout.write(
      `${JSON.stringify({ ...cleanConfig, roles: env.describeRoles(), taskset: { id: taskset.id, size: taskset.size } }, null, 2)}
`,
    );
    process.stdout.write(
      `dry run: ${tasks} tasks × ${config.rollouts} rollouts = ${tasks * config.rollouts} episodes${shard ? ' (this shard runs its slice of them)' : ''}` +
        `${runDir ? ` → ${runDir}${clean && existsSync(runDir) ? ' (would be replaced)' : ''}` : resumeDir ? ` → ${resumeDir} (resumed)` : ''}; nothing was called or created
`,
    );
    return 0;
  }
  if (preflight) await Promise.all(clients.map((client) => client.preflight()));
  if (runDir && clean) rmSync(runDir, { recursive: true, force: true });
  const outDir =
    resumeDir ??
    runDir ??
    join(
      config.outputs,
      runDirName({ env: definition.id, model: config.model, harness: harnessName(envConfig, definition.roles) }),
    );
  if (!resumeDir) {
    // The run directory is born with its config, so a kill at any point leaves a resumable run.
    await ensureDir(outDir);
    writeFileAtomic(join(outDir, 'config.json'), `${JSON.stringify(cleanConfig, null, 2)}\n`);
  }
  logger = pino(
    { level: 'info' },
    pino.destination({ dest: join(await ensureDir(join(outDir, 'logs')), 'eval.log'), sync: true }),
  );
  const controller = new AbortController();
  let interrupted = 0;
  const onSignal = () => {
    interrupted++;
    if (interrupted > 1) process.exit(EXIT_CODES.interrupted);
    process.stderr.write('\ninterrupted: finishing episodes in flight (Ctrl-C again to quit now; --resume continues)\n');
    controller.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  const progress = progressReporter({ stream: process.stderr, label: `${config.env.id} ${config.model}` });
  try {
    const result = await runEval({
      env,
      taskset,
      ...(config.numTasks !== undefined ? { numTasks: config.numTasks } : {}),
      rollouts: config.rollouts,
      concurrency: config.concurrency,
      outDir,
      resume: resumeDir !== undefined,
      config: cleanConfig,
      model: config.model,
      passThreshold: config.passThreshold,
      ...(config.prices ? { prices: config.prices } : {}),
      onProgress: progress.update,
      log,
      signal: controller.signal,
      ...(shard ? { shard } : {}),
    });
    progress.done();
    process.stdout.write(`${formatSummary(result.summary)}\n`);
    process.stdout.write(
      `\nrun directory: ${resolve(outDir)}\n  traces:  ${join(outDir, 'traces.jsonl')}\n  summary: ${join(outDir, 'summary.json')}\n  view:    troupe view ${outDir}\n`,
    );
    if (controller.signal.aborted) return EXIT_CODES.interrupted;
    const { episodes, episodesFailed } = result.summary;
    if (episodesFailed > 0 && !allowFailures) {
      process.stderr.write(
        `troupe: ${episodesFailed} of ${episodes} episodes failed (errors by type in summary.json; --allow-failures exits 0)\n`,
      );
      return episodesFailed === episodes ? EXIT_CODES.allFailed : EXIT_CODES.someFailed;
    }
    return EXIT_CODES.ok;
  } finally {
    process.off('SIGINT', onSignal);
    await interception.close();
  }
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
  const { mkdir } = await import('node:fs/promises');
  await mkdir(path, { recursive: true });
  return path;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    if (TroupeError.isInstance(error) && error.name === 'ConfigError') {
      process.stderr.write(`troupe: ${error.message}\n`);
      process.exitCode = EXIT_CODES.config;
    } else if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`troupe: ${(error as Error).message}\n(see troupe --help)\n`);
      process.exitCode = EXIT_CODES.config;
    } else if (TroupeError.isInstance(error) && error.name === 'ProviderError') {
      // The preflight check: the endpoint is wrong or down; nothing was run or written.
      process.stderr.write(`troupe: ${error.message}\n(no run directory was created; --no-preflight skips this check)\n`);
      process.exitCode = EXIT_CODES.config;
    } else {
      process.stderr.write(`troupe: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
