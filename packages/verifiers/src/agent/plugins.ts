import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../errors/troupe-error.ts';
import { BashHarness } from '../harness/bash-harness.ts';
import type { Harness } from '../harness/harness.ts';
import { NullHarness } from '../harness/null-harness.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { PluginRef } from './agent-config.ts';

/**
 * What a plugin factory may read besides its options: the environment variables the caller chose to
 * pass (the CLI passes its process environment; below the CLI nothing reads `process.env`).
 */
export interface PluginContext {
  env?: Readonly<Record<string, string | undefined>>;
}

type Factory<T> = (options: Record<string, unknown>) => T | Promise<T>;

const harnessFactories = new Map<string, Factory<Harness>>([
  ['null', () => new NullHarness()],
  ['bash', (options) => new BashHarness(options)],
]);
const runtimeFactories = new Map<string, Factory<Runtime>>();
let searchPaths: string[] = [];
let pluginContext: PluginContext = {};

/** Sets the environment plugins read credentials from (`createRuntime(options, { env })`). */
export function setPluginEnvironment(env: Readonly<Record<string, string | undefined>>): void {
  pluginContext = { env: { ...env } };
}

/**
 * Folders from which `@troupe/harness-<id>` / `@troupe/runtime-<id>` packages are resolved when
 * this package cannot see them itself (the CLI passes the working directory: the user's project).
 */
export function setPluginSearchPaths(paths: string[]): void {
  searchPaths = [...paths];
}

/**
 * Imports a plugin package by name: from where this package is installed, else from the plugin
 * search paths (the user's project).
 */
export async function importPluginPackage(pkg: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pkg)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' || !String((error as Error).message).includes(pkg))
      throw error;
    for (const folder of searchPaths) {
      let resolved: string;
      try {
        resolved = createRequire(join(folder, 'package.json')).resolve(pkg);
      } catch {
        continue;
      }
      return (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
    }
    throw error;
  }
}

/** Registers a harness id (plugins do this when they are not an installed `@troupe/harness-<id>`). */
export function registerHarness(id: string, factory: Factory<Harness>): void {
  harnessFactories.set(id, factory);
}

/** Registers a runtime id. */
export function registerRuntime(id: string, factory: Factory<Runtime>): void {
  runtimeFactories.set(id, factory);
}

function split(ref: PluginRef): { id: string; options: Record<string, unknown> } {
  if (typeof ref === 'string') return { id: ref, options: {} };
  const { id, ...options } = ref;
  return { id, options };
}

/** `owner/name@v` → `name`, then snake_case (the Python original's normalisation). */
export function normalizePluginId(id: string): string {
  const name = id.split('/').pop()?.split('@')[0] ?? id;
  return name.replace(/-/g, '_').toLowerCase();
}

async function load<T>(kind: 'harness' | 'runtime', ref: PluginRef, factories: Map<string, Factory<T>>): Promise<T> {
  const { id: raw, options } = split(ref);
  const id = normalizePluginId(raw);
  const known = factories.get(id);
  if (known) return known(options);
  const pkg = `@troupe/${kind}-${id.replace(/_/g, '-')}`;
  let module: Record<string, unknown>;
  try {
    module = await importPluginPackage(pkg);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(pkg)) {
      throw new ConfigError(
        `${kind} ${JSON.stringify(raw)} is not built in (${[...factories.keys()].join(', ') || 'none'}) and package ${pkg} is not installed`,
      );
    }
    throw error;
  }
  const create = module[kind === 'harness' ? 'createHarness' : 'createRuntime'];
  if (typeof create !== 'function')
    throw new ConfigError(`${pkg} does not export create${kind === 'harness' ? 'Harness' : 'Runtime'}()`);
  return (await create(options, pluginContext)) as T;
}

/**
 * Builds the harness a reference names: a built-in id (`null`, `bash`), a registered factory, or the
 * package `@troupe/harness-<id>` (its `createHarness(options)`). Rejects with a `ConfigError` when
 * the package is missing or exports no `createHarness`, or its options are invalid.
 */
export function loadHarness(ref: PluginRef): Promise<Harness> {
  return load('harness', ref, harnessFactories);
}

/**
 * Builds the runtime a reference names: `local` (built in), a registered factory, or the package
 * `@troupe/runtime-<id>` (its `createRuntime(options)`). Rejects with a `ConfigError` when the
 * package is missing or exports no `createRuntime`, or its options are invalid.
 */
export async function loadRuntime(ref: PluginRef): Promise<Runtime> {
  if (!runtimeFactories.has('local')) {
    const { LocalRuntime } = await import('../runtime/local-runtime.ts');
    runtimeFactories.set('local', (options) => new LocalRuntime(options as never));
  }
  return load('runtime', ref, runtimeFactories);
}
