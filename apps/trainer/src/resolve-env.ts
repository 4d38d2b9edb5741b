import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TrainingHooks } from '@troupe/prime-rl/orchestrator';
import { type EnvDefinition, envIds, kuhnPokerEnv, loadEnvDefinition, registerEnv } from '@troupe/verifiers';
import { RunConfigError } from './run-config.ts';

/** An env definition with the training hooks its module declares. */
export interface ResolvedEnv {
  definition: EnvDefinition<string, Record<string, unknown>>;
  training?: TrainingHooks;
}

function isDefinition(value: unknown): value is EnvDefinition<string, Record<string, unknown>> {
  const v = value as { id?: unknown; roles?: unknown; run?: unknown } | null;
  return !!v && typeof v.id === 'string' && typeof v.roles === 'object' && typeof v.run === 'function';
}

function fromModule(module: Record<string, unknown>, ref: string, field: string): ResolvedEnv {
  const candidates = [module.default, module.env, ...Object.values(module)];
  const definition = candidates.find(isDefinition);
  if (!definition)
    throw new RunConfigError(`${field}: module ${ref} exports no env definition (an object with id, roles and run)`);
  const training = (module.training ?? (definition as { training?: unknown }).training) as TrainingHooks | undefined;
  return { definition, ...(training ? { training } : {}) };
}

/**
 * Resolves a source's `env`: a module path (`./envs/my-env.ts`, relative to `baseDir`), a
 * registry id, or an `@troupe/env-<id>` package. The module's `training` export (or the
 * definition's `training`) carries its training hooks.
 */
export async function resolveEnv(ref: string, options: { baseDir: string; field: string }): Promise<ResolvedEnv> {
  if (!envIds().includes('kuhn-poker')) registerEnv('kuhn-poker', async () => kuhnPokerEnv as never);
  if (ref.startsWith('.') || isAbsolute(ref) || /\.(m?[jt]s)$/.test(ref)) {
    const path = isAbsolute(ref) ? ref : resolve(options.baseDir, ref);
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      throw new RunConfigError(`${options.field}: cannot load env module ${path}: ${(error as Error).message}`);
    }
    return fromModule(module, path, options.field);
  }
  if (envIds().includes(ref)) {
    const definition = await loadEnvDefinition(ref);
    const training = (definition as { training?: TrainingHooks }).training;
    return { definition, ...(training ? { training } : {}) };
  }
  const pkg = ref.startsWith('@') ? ref : `@troupe/env-${ref}`;
  try {
    return fromModule((await import(pkg)) as Record<string, unknown>, pkg, options.field);
  } catch (error) {
    throw new RunConfigError(
      `${options.field}: env ${JSON.stringify(ref)} is not a registry id (${envIds().join(', ')}), nor an installed package ${pkg} (${(error as Error).message.split('\n')[0]}), nor a module path`,
    );
  }
}
