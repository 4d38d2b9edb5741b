import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';
import { applySets, deepMerge, type EvalConfig, parseEvalConfig, readConfigFile, setPath } from '../eval/eval-config.ts';
import { hasRoleFlags, type RoleFlags } from '../eval/resolve-env.ts';
import { parseShard, type Shard } from '../eval/shard.ts';
import { assertSavedModulesPassedAgain } from '../util/config-keys.ts';

/** The flags of `troupe eval` and `troupe validate` (described in `HELP`). */
const EVAL_OPTIONS = {
  config: { type: 'string', short: 'f' },
  model: { type: 'string', short: 'm' },
  'base-url': { type: 'string', short: 'b' },
  'api-key-var': { type: 'string' },
  env: { type: 'string', short: 'e' },
  taskset: { type: 'string', short: 't' },
  'num-tasks': { type: 'string', short: 'n' },
  select: { type: 'string', multiple: true },
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
  'only-noop': { type: 'boolean' },
  'only-gold': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  set: { type: 'string', short: 's', multiple: true },
} as const;

const parseEvalFlags = (args: string[]) =>
  parseArgs({ args: resumeRunDir(args), options: EVAL_OPTIONS, strict: true, allowPositionals: false }).values;

/**
 * `--run-dir DIR --resume` (no value after `--resume`) continues DIR, the spelling `troupe train`
 * uses; it becomes `--resume DIR`. Any other use of the flags is left to the parser.
 */
function resumeRunDir(args: string[]): string[] {
  const resumeAt = args.indexOf('--resume');
  const next = args[resumeAt + 1];
  if (resumeAt < 0 || (next !== undefined && !next.startsWith('-'))) return args;
  const dirAt = args.indexOf('--run-dir');
  const joined = args.find((arg) => arg.startsWith('--run-dir='));
  const dir = dirAt >= 0 ? args[dirAt + 1] : joined?.slice('--run-dir='.length);
  if (dir === undefined || dir === '' || dir.startsWith('-')) return args;
  const rest = args.filter((arg, at) => at !== dirAt && at !== dirAt + 1 && arg !== joined);
  rest.splice(rest.indexOf('--resume') + 1, 0, dir);
  return rest;
}

type EvalFlags = ReturnType<typeof parseEvalFlags>;

/** What `troupe eval` was asked to do: the parsed config and the flags that steer the run itself. */
export interface BuiltConfig {
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
  /** `validate --only-noop`: score each task with no agent action and flag the ones already ≥ 1. */
  onlyNoop?: boolean;
  /** `validate --only-gold`: score each task's gold reply and flag the ones below 1. */
  onlyGold?: boolean;
}

const HELP_ONLY: BuiltConfig = {
  config: {} as EvalConfig,
  roleFlags: {},
  changesOnResume: false,
  allowFailures: false,
  preflight: false,
  help: true,
};

/**
 * Parses `troupe eval` arguments into a config: the resumed run's `config.json`, then `--config`,
 * then the flags, then each `--set` (the later wins), checked by `parseEvalConfig`.
 */
export function buildConfig(args: string[]): BuiltConfig {
  const values = parseEvalFlags(args);
  if (values.help) return HELP_ONLY;
  const raw = baseConfig(values);
  const overrides = flagOverrides(values);
  for (const [path, value] of overrides) if (value !== undefined) setPath(raw, path, value);
  if (values.resume) {
    // Modules come from what the user passes now, never from the run directory's config.json.
    const passed: Record<string, unknown> = values.config ? readConfigFile(values.config) : {};
    for (const [path, value] of overrides) if (value !== undefined) setPath(passed, path, value);
    const saved = readConfigFile(join(values.resume, 'config.json'));
    assertSavedModulesPassedAgain({ saved, passed, command: `--resume ${values.resume}` });
  }
  applySets(raw, values.set ?? []);
  applyDefaults(raw);
  const roleFlags = roleFlagsOf(values);
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
    ...(values['only-noop'] ? { onlyNoop: true } : {}),
    ...(values['only-gold'] ? { onlyGold: true } : {}),
    ...runHygiene(values),
  };
}

/** The resumed run's `config.json` (when `--resume`), with `--config FILE` merged over it. */
function baseConfig(values: EvalFlags): Record<string, unknown> {
  let raw: Record<string, unknown> = {};
  if (values.resume) {
    const saved = join(values.resume, 'config.json');
    if (!existsSync(saved)) throw new ConfigError(`--resume ${values.resume}: no config.json there (is it a run directory?)`);
    raw = readConfigFile(saved);
  }
  if (values.config) raw = deepMerge(raw, readConfigFile(values.config));
  return raw;
}

function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`--${name} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

function finiteNumber(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n)) throw new ConfigError(`--${name} must be a number, got ${JSON.stringify(text)}`);
  return n;
}

/** Each config path a flag sets, with the flag's value (`undefined` when the flag is absent). */
function flagOverrides(values: EvalFlags): [string, unknown][] {
  return [
    ['model', values.model],
    ['client.baseUrl', values['base-url']],
    ['client.apiKeyVar', values['api-key-var']],
    ['env.id', values.env],
    ['env.taskset', values.taskset],
    ['numTasks', positiveInt('num-tasks', values['num-tasks'])],
    ...selectOverrides(values.select),
    ['rollouts', positiveInt('rollouts', values.rollouts)],
    ['concurrency', positiveInt('concurrency', values.concurrency)],
    ['sampling.temperature', finiteNumber('temperature', values.temperature)],
    ['sampling.topP', finiteNumber('top-p', values['top-p'])],
    ['sampling.topK', finiteNumber('top-k', values['top-k'])],
    ['sampling.minP', finiteNumber('min-p', values['min-p'])],
    ['sampling.seed', finiteNumber('seed', values.seed)],
    ['sampling.stop', values.stop],
    ['sampling.reasoningEffort', values['reasoning-effort']],
    ['sampling.maxTokens', positiveInt('max-tokens', values['max-tokens'])],
    ['outputs', values.outputs],
  ];
}

/** The `--select` fields each flag names. */
const SELECT_FIELDS = ['indices', 'keys', 'types', 'sample', 'seed'] as const;

/**
 * `--select indices=0-9,20`, `--select keys=a,b`, `--select types=t`, `--select sample=N`,
 * `--select seed=N`: each flag sets one field of `select` (lists split on commas). Shared by eval,
 * validate and debug.
 */
export function selectOverrides(entries: readonly string[] | undefined): [string, unknown][] {
  return (entries ?? []).map((entry) => {
    const eq = entry.indexOf('=');
    const field = eq > 0 ? entry.slice(0, eq) : entry;
    const text = eq > 0 ? entry.slice(eq + 1) : '';
    if (!(SELECT_FIELDS as readonly string[]).includes(field) || text === '')
      throw new ConfigError(`--select ${entry}: expected FIELD=VALUE with FIELD one of ${SELECT_FIELDS.join(', ')}`);
    if (field === 'keys' || field === 'types') return [`select.${field}`, text.split(',').filter(Boolean)];
    if (field === 'indices') return ['select.indices', text];
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0)
      throw new ConfigError(`--select ${field} must be a whole number, got ${JSON.stringify(text)}`);
    return [`select.${field}`, n];
  });
}

/** The endpoint of a client table without `baseUrl`, and the default env. */
function applyDefaults(raw: Record<string, unknown>): void {
  if (raw.client && typeof raw.client === 'object' && !('baseUrl' in raw.client)) {
    (raw.client as Record<string, unknown>).baseUrl = 'http://127.0.0.1:8000/v1';
  }
  raw.env ??= {};
  const env = raw.env as Record<string, unknown>;
  env.id ??= 'single-agent';
}

function roleFlagsOf(values: EvalFlags): RoleFlags {
  return {
    ...(values.harness !== undefined ? { harness: values.harness } : {}),
    ...(values.runtime !== undefined ? { runtime: values.runtime } : {}),
    ...(values['max-turns'] !== undefined ? { maxTurns: positiveInt('max-turns', values['max-turns']) } : {}),
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
