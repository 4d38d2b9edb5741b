import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { importPluginPackage } from '../agent/plugins.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { arithmeticTaskset, lastInteger } from '../task/arithmetic.ts';
import { Taskset } from '../task/taskset.ts';
import type { EnvDefinition } from './env.ts';

type EnvLoader = () => Promise<EnvDefinition<string, Record<string, unknown>>>;
type TasksetLoader = (options: Record<string, unknown>) => Taskset | Promise<Taskset>;

const envs = new Map<string, EnvLoader>([
  ['single-agent', async () => (await import('./builtin/single-agent/single-agent-env.ts')).singleAgentEnv as never],
  ['best-of-n', async () => (await import('./builtin/best-of-n/best-of-n-env.ts')).bestOfNEnv as never],
  ['agentic-judge', async () => (await import('./builtin/agentic-judge/agentic-judge-env.ts')).agenticJudgeEnv as never],
  [
    'shared-agentic-judge',
    async () => (await import('./builtin/agentic-judge/agentic-judge-env.ts')).sharedAgenticJudgeEnv as never,
  ],
  [
    'isolated-verifier',
    async () => (await import('./builtin/isolated-verifier/isolated-verifier-env.ts')).isolatedVerifierEnv as never,
  ],
  ['proposer-solver', async () => (await import('./builtin/proposer-solver/proposer-solver-env.ts')).proposerSolverEnv as never],
  ['user-sim', async () => (await import('./builtin/user-sim/user-sim-env.ts')).userSimEnv as never],
]);

const tasksets = new Map<string, TasksetLoader>([
  ['arithmetic', (options) => arithmeticTaskset(options as { size?: number; seed?: number })],
  ['proposer-solver-seeds', async () => (await import('./builtin/proposer-solver/seed-topics.ts')).proposerSolverSeeds()],
]);

/** Makes an env id available to `troupe eval --env <id>`. */
export function registerEnv(id: string, loader: EnvLoader): void {
  envs.set(id, loader);
}

/** Makes a taskset id available to `--taskset <id>`. */
export function registerTaskset(id: string, loader: TasksetLoader): void {
  tasksets.set(id, loader);
}

/** The ids of the registered envs (built-ins and `registerEnv` calls), in registration order. */
export function envIds(): string[] {
  return [...envs.keys()];
}

/** True when an `--env` value names a module file (`./my-env.ts`, `/abs/env.mjs`) rather than an id. */
export function isEnvModulePath(ref: string): boolean {
  return /^(\.{1,2}[\\/]|[\\/])/.test(ref) || /\.(m|c)?(t|j)s$/.test(ref);
}

function definitionFrom(module: Record<string, unknown>, where: string): EnvDefinition<string, Record<string, unknown>> {
  let candidate = (module.default ?? module.env) as (Partial<EnvDefinition> & Record<string, unknown>) | undefined;
  // A .ts file outside a `"type": "module"` package loads as CommonJS: its exports sit under `default`.
  if (candidate && typeof candidate.run !== 'function' && (candidate.default ?? candidate.env))
    candidate = (candidate.default ?? candidate.env) as typeof candidate;
  if (!candidate || typeof candidate.run !== 'function') {
    // No default or `env` export: the module's one exported definition, when it has exactly one
    // (a CommonJS-loaded .ts module keeps its named exports under `default`).
    const namespace = candidate && typeof candidate === 'object' ? { ...module, ...candidate } : module;
    const definitions = Object.values(namespace).filter(
      (v) => !!v && typeof v === 'object' && typeof (v as Partial<EnvDefinition>).run === 'function' && 'roles' in v,
    );
    if (definitions.length === 1) candidate = definitions[0] as typeof candidate;
  }
  if (
    !candidate ||
    typeof candidate !== 'object' ||
    typeof candidate.id !== 'string' ||
    typeof candidate.run !== 'function' ||
    typeof candidate.roles !== 'object'
  ) {
    throw new ConfigError(
      `env ${where}: expected a default export (or an \`env\` export, or exactly one exported env) made with defineEnv({ id, roles, run })`,
    );
  }
  return candidate as EnvDefinition<string, Record<string, unknown>>;
}

/** What {@link importEnv} loaded: the definition and the module it came from (`null` for a registered id). */
export interface ImportedEnv {
  definition: EnvDefinition<string, Record<string, unknown>>;
  /** The module's exports (a training config reads `training` there); `null` for a registered id. */
  module: Record<string, unknown> | null;
  /** What was loaded: the file's absolute path, the package name, or the id. */
  where: string;
}

/** Imports a module file: `.mjs` / `.js` / `.cjs` with plain `import()`, `.ts` / `.mts` / `.cts` through tsx's `tsImport`. */
async function importModuleFile(file: string, ref: string): Promise<Record<string, unknown>> {
  if (!existsSync(file)) throw new ConfigError(`env ${ref}: file ${file} does not exist`);
  const url = pathToFileURL(file).href;
  try {
    if (/\.(m|c)?ts$/.test(file)) {
      // The TypeScript loader is loaded only for a TypeScript file, and only for that import.
      const { tsImport } = await import('tsx/esm/api');
      // tsx emits inline source maps: with them on, the module's stacks name its own lines.
      process.setSourceMapsEnabled(true);
      return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    }
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    // The module's own error (a syntax error, a throw at import) is kept as the cause, with its stack.
    throw new ConfigError(`env ${ref}: cannot load ${file}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
}

/**
 * The one env loader of `troupe eval` and `troupe train`: a registered id (built in or
 * `registerEnv`), a module file (`./my-env.ts`, `.mts`, `.mjs`, `.js`; relative to `baseDir`,
 * default the working directory), or an installed package (`@troupe/env-<id>`, or any package
 * named in full, e.g. `@acme/my-env`), resolved from the user's project as well as from here.
 */
export async function importEnv(ref: string, options: { baseDir?: string } = {}): Promise<ImportedEnv> {
  const loader = envs.get(ref);
  if (loader) return { definition: await loader(), module: null, where: ref };
  if (isEnvModulePath(ref)) {
    const file = resolve(options.baseDir ?? process.cwd(), ref);
    const module = await importModuleFile(file, ref);
    return { definition: definitionFrom(module, ref), module, where: file };
  }
  const candidates = ref.startsWith('@') ? [ref] : [`@troupe/env-${ref.replace(/_/g, '-')}`, ref];
  for (const pkg of candidates) {
    let module: Record<string, unknown>;
    try {
      module = await importPluginPackage(pkg);
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(pkg))
        continue;
      throw new ConfigError(`env ${ref}: cannot load package ${pkg}: ${(error as Error).message.split('\n')[0]}`, {
        cause: error,
      });
    }
    return { definition: definitionFrom(module, pkg), module, where: pkg };
  }
  throw new ConfigError(
    `env.id ${JSON.stringify(ref)} is unknown; known envs: ${envIds().join(', ')} (or a module path, or a package: npm install ${candidates[0]})`,
  );
}

/**
 * Loads a user's env module: `.mjs` / `.js` with plain `import()`, `.ts` / `.mts` through tsx's
 * `tsImport` (the TypeScript loader is loaded only for a `.ts` file, and only for that import).
 */
export async function loadEnvModule(path: string): Promise<EnvDefinition<string, Record<string, unknown>>> {
  return (await importEnv(path)).definition;
}

/**
 * An env by id: built in (`single-agent`, `best-of-n`, …), registered with `registerEnv`, a module
 * path (`./my-env.ts`, `./my-env.mjs`), or an installed `@troupe/env-<id>` package.
 */
export async function loadEnvDefinition(id: string): Promise<EnvDefinition<string, Record<string, unknown>>> {
  return (await importEnv(id)).definition;
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
