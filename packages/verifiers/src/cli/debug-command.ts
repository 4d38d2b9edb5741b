import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import type { ClientConfig } from '../agent/agent-config.ts';
import { ConfigError, TimeoutError, TroupeError } from '../errors/troupe-error.ts';
import { applySets, deepMerge, type EvalConfig, parseEvalConfig, readConfigFile, setPath } from '../eval/eval-config.ts';
import { createEvalEnv, type RoleFlags, resolveEnvConfig } from '../eval/resolve-env.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import type { ExecResult, Sandbox } from '../runtime/runtime.ts';
import { selectTasks } from '../task/select.ts';
import type { Task } from '../task/task.ts';
import type { Taskset } from '../task/taskset.ts';
import { selectOverrides } from './eval-args.ts';

const HELP = `troupe debug — run a command inside a task's sandbox, booted as troupe eval would boot it

Usage:
  troupe debug --env ID|MODULE --task I [options] -- COMMAND [ARG...]
  troupe debug --env ID|MODULE --task I [options] --script FILE [-- ARG...]

The sandbox is made exactly as \`troupe eval\` makes it for that task: the same env resolution,
config file, role config, runtime (image and workdir from the task) and setup (the task's setup,
then the harness's). Then the command runs in the sandbox's workdir with its stdout and stderr
streamed, and the sandbox is torn down, also on Ctrl-C. No model is called.

Options:
  -e, --env ID|MODULE    env id, an installed @troupe/env-<id>, or a module path (./my-env.ts);
                         default: the config's env.id, else single-agent
      --task I           index of the task in the taskset, from 0 (required without --select)
      --select FIELD=VALUE pick tasks as eval does (indices=, keys=, types=, sample=, seed=;
                         repeatable); --task I is then the index in that selection (default 0)
  -f, --config FILE      an eval config (TOML or JSON): its env, taskset, roles and runtimes apply
  -t, --taskset ID|FILE  taskset id or a .jsonl file (as for eval)
      --role NAME        the role whose runtime and harness make the sandbox (default: the env's first role)
      --harness ID       harness for every role (as for eval; its setup runs)
      --runtime ID       runtime for every role (as for eval)
  -s, --set PATH=VALUE   set any config field, e.g. --set env.agent.runtime.id=docker (repeatable)
      --script FILE      copy a host script into the sandbox and run it, with the ARGs after --
                         (a script without #! runs with /bin/sh)
      --timeout SECONDS  kill the command after this many seconds (exit 124)
  -h, --help

The command: one word after -- runs with /bin/sh -c (pipes and globs work: -- 'ls | wc -l');
several words are an argv, run without a shell.

Exit codes:
  the command's own exit code (124 when --timeout killed it)
  1    the sandbox could not be booted or set up (the error is printed)
  2    bad input: an unknown env or role, a task index out of range, no command
  130  interrupted (Ctrl-C); the sandbox was torn down
`;

/** Exit code of a command killed by `--timeout` (as `timeout(1)`). */
const TIMED_OUT = 124;

interface DebugArgs {
  raw: Record<string, unknown>;
  roleFlags: RoleFlags;
  taskIndex: number;
  role?: string;
  script?: string;
  command: string[];
  timeoutMs?: number;
}

/** The flags of `troupe debug` (described in `HELP`); the command follows `--`. */
const DEBUG_OPTIONS = {
  env: { type: 'string', short: 'e' },
  task: { type: 'string' },
  select: { type: 'string', multiple: true },
  config: { type: 'string', short: 'f' },
  taskset: { type: 'string', short: 't' },
  role: { type: 'string' },
  harness: { type: 'string' },
  runtime: { type: 'string' },
  set: { type: 'string', short: 's', multiple: true },
  script: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseDebugArgs(args: string[]): DebugArgs | 'help' {
  const separator = args.indexOf('--');
  const flags = separator === -1 ? args : args.slice(0, separator);
  const command = separator === -1 ? [] : args.slice(separator + 1);
  const { values, positionals } = parseArgs({ args: flags, options: DEBUG_OPTIONS, strict: true, allowPositionals: true });
  if (values.help) return 'help';
  if (positionals.length > 0) {
    throw new ConfigError(
      `troupe debug: unexpected ${JSON.stringify(positionals[0])} before --; the command goes after --: troupe debug --task 0 -- ${positionals.join(' ')}`,
    );
  }
  const taskIndex = values.task === undefined && values.select ? 0 : parseTaskIndex(values.task);
  if (values.script === undefined && command.length === 0)
    throw new ConfigError('troupe debug: no command: give one after -- (troupe debug --task 0 -- ls -la) or --script FILE');
  const timeoutMs = values.timeout === undefined ? undefined : parseTimeoutMs(values.timeout);
  return {
    raw: debugRawConfig(values),
    roleFlags: {
      ...(values.harness !== undefined ? { harness: values.harness } : {}),
      ...(values.runtime !== undefined ? { runtime: values.runtime } : {}),
    },
    taskIndex,
    ...(values.role !== undefined ? { role: values.role } : {}),
    ...(values.script !== undefined ? { script: values.script } : {}),
    command,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  };
}

function parseTaskIndex(text: string | undefined): number {
  if (text === undefined) throw new ConfigError('troupe debug: --task I is required (the index of the task, from 0)');
  const taskIndex = Number(text);
  if (!Number.isInteger(taskIndex) || taskIndex < 0 || text.trim() === '')
    throw new ConfigError(`--task must be a task index (an integer from 0), got ${JSON.stringify(text)}`);
  return taskIndex;
}

function parseTimeoutMs(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new ConfigError(`--timeout must be a positive number of seconds, got ${JSON.stringify(text)}`);
  return Math.round(seconds * 1000);
}

/** `--config FILE`, then `--env`, `--taskset` and each `--set` over it (the later wins). */
function debugRawConfig(values: {
  config?: string;
  env?: string;
  taskset?: string;
  select?: string[];
  set?: string[];
}): Record<string, unknown> {
  let raw: Record<string, unknown> = {};
  if (values.config) raw = deepMerge(raw, readConfigFile(values.config));
  if (values.env !== undefined) setPath(raw, 'env.id', values.env);
  if (values.taskset !== undefined) setPath(raw, 'env.taskset', values.taskset);
  for (const [path, value] of selectOverrides(values.select)) setPath(raw, path, value);
  applySets(raw, values.set ?? []);
  return raw;
}

/** The eval config `troupe debug` boots with: the default env, and a model name when none is set. */
function debugEvalConfig(raw: Record<string, unknown>): EvalConfig {
  raw.env ??= {};
  (raw.env as Record<string, unknown>).id ??= 'single-agent';
  // The model is never called; a config without one still boots.
  raw.model ??= 'troupe-debug';
  if (raw.client && typeof raw.client === 'object' && !('baseUrl' in raw.client)) {
    (raw.client as Record<string, unknown>).baseUrl = 'http://127.0.0.1:8000/v1';
  }
  return parseEvalConfig(raw);
}

/** Task `index` of the taskset, or of the config's `select` when it has one; out of range names the count. */
function debugTask(taskset: Taskset, config: EvalConfig, index: number): Task {
  const selected = config.select ? selectTasks(taskset, config.select, config.numTasks) : undefined;
  const size = selected?.length ?? taskset.size;
  const where = selected ? `the selection (--select) holds` : `taskset ${taskset.id} has`;
  if (index >= size)
    throw new ConfigError(
      `--task ${index}: ${where} ${size} task${size === 1 ? '' : 's'}` + (size > 0 ? ` (indexes 0 to ${size - 1})` : ''),
    );
  return selected ? (selected[index] as Task) : taskset.at(index);
}

/** A client for the config's endpoint; `troupe debug` never calls it, so no API key is read. */
function idleClient(config: ClientConfig, model: string): OpenAICompatibleClient {
  return new OpenAICompatibleClient({ baseUrl: config.baseUrl, apiKey: 'EMPTY', model });
}

/**
 * `troupe debug`: boots the sandbox of one task as `troupe eval` would, runs a command or a script
 * in it with its output streamed to this process's stdout and stderr, and always tears the
 * sandbox down. Resolves with the command's exit code.
 */
export async function debugCommand(args: string[]): Promise<number> {
  const parsed = parseDebugArgs(args);
  if (parsed === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const config = debugEvalConfig(parsed.raw);
  const resolved = await resolveEnvConfig({ config, roleFlags: parsed.roleFlags });
  const log = (line: string) => process.stderr.write(`troupe debug: ${line}\n`);
  const { env, taskset } = await createEvalEnv({ resolved, config, makeClient: idleClient, log });
  const role = parsed.role ?? env.roles[0] ?? '';
  const agent = env.roles.includes(role) ? env.baseAgents[role] : undefined;
  if (!agent) throw new ConfigError(`--role ${role}: env ${env.id} has no such role; roles: ${env.roles.join(', ')}`);
  const task = debugTask(taskset, config, parsed.taskIndex);
  const script = parsed.script === undefined ? undefined : readScript(parsed.script);
  const interrupt = interruptOnSignals();
  let sandbox: Sandbox | undefined;
  try {
    try {
      sandbox = await agent.openSandbox(task, { signal: interrupt.signal });
    } catch (error) {
      if (interrupt.signalled()) return 130;
      const message = TroupeError.isInstance(error) ? `${error.name}: ${error.message}` : String(error);
      process.stderr.write(
        `troupe debug: could not boot ${role}'s ${agent.runtime.id} sandbox for task ${parsed.taskIndex}: ${message}\n`,
      );
      return 1;
    }
    if (interrupt.signalled()) return 130;
    if (process.stderr.isTTY) {
      log(
        `${role}'s ${agent.runtime.id} sandbox ${sandbox.id} for task ${parsed.taskIndex} (${task.key}), workdir ${sandbox.workdir}`,
      );
    }
    const result = await runInSandbox(sandbox, parsed, script, interrupt.signal);
    if (interrupt.signalled() || result === 'aborted') return 130;
    if (result.timedOut) {
      process.stderr.write(`troupe debug: the command ran past --timeout and was killed\n`);
      return TIMED_OUT;
    }
    return result.exitCode;
  } finally {
    if (sandbox) await sandbox.stop().catch((error) => log(`sandbox stop failed: ${(error as Error).message}`));
    await agent.runtime.close?.().catch((error) => log(`runtime close failed: ${(error as Error).message}`));
    interrupt.dispose();
  }
}

function readScript(path: string): { name: string; data: Buffer } {
  try {
    return { name: basename(path), data: readFileSync(path) };
  } catch (error) {
    throw new ConfigError(`--script ${path}: cannot read it (${(error as Error).message})`);
  }
}

/**
 * SIGINT and SIGTERM abort `signal` (the command is stopped and the sandbox torn down) once;
 * `signalled()` tells whether one came; `dispose()` stops listening.
 */
function interruptOnSignals() {
  const controller = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    if (signalled) return;
    signalled = name;
    process.stderr.write(`\ntroupe debug: ${name}: stopping the command and tearing the sandbox down\n`);
    controller.abort(new TimeoutError(`interrupted (${name})`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    signalled: () => signalled !== undefined,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

async function runInSandbox(
  sandbox: Sandbox,
  parsed: DebugArgs,
  script: { name: string; data: Buffer } | undefined,
  signal: AbortSignal,
): Promise<ExecResult | 'aborted'> {
  let argv: string | string[];
  if (script) {
    const path = `${sandbox.workdir}/.troupe-debug/${script.name}`;
    await sandbox.writeFile(path, script.data, { mode: 0o755 });
    argv = script.data.subarray(0, 2).toString() === '#!' ? [path, ...parsed.command] : ['/bin/sh', path, ...parsed.command];
  } else {
    argv = parsed.command.length === 1 ? (parsed.command[0] as string) : parsed.command;
  }
  let streamedOut = false;
  let streamedErr = false;
  try {
    const result = await sandbox.exec(argv, {
      signal,
      ...(parsed.timeoutMs !== undefined ? { timeoutMs: parsed.timeoutMs } : {}),
      onStdout: (chunk) => {
        streamedOut = true;
        process.stdout.write(chunk);
      },
      onStderr: (chunk) => {
        streamedErr = true;
        process.stderr.write(chunk);
      },
    });
    // A runtime that does not stream hands the whole output over at the end.
    if (!streamedOut && result.stdout) process.stdout.write(result.stdout);
    if (!streamedErr && result.stderr) process.stderr.write(result.stderr);
    return result;
  } catch (error) {
    if (signal.aborted) return 'aborted';
    throw error;
  }
}
