import type { TrainingHooks } from '@troupe/prime-rl/orchestrator';
import { ConfigError, type EnvDefinition, envIds, importEnv, registerEnv } from '@troupe/verifiers';
import { kuhnPokerEnv } from '@troupe/verifiers/kuhn';
import { RunConfigError } from './run-config.ts';

/** An env definition with the training hooks its module declares. */
export interface ResolvedEnv {
  definition: EnvDefinition<string, Record<string, unknown>>;
  training?: TrainingHooks;
}

/**
 * Resolves a source's `env` with the loader `troupe eval` uses (`importEnv`): a registry id, a
 * module file (`./envs/my-env.ts`, `.mts`, `.mjs`, `.js`; relative to `baseDir`), or an installed
 * package (`@troupe/env-<id>`, or a package named in full). The module's `training` export (or the
 * definition's `training`) carries its training hooks. Errors name the field; the module's own
 * error stays the `cause`.
 */
export async function resolveEnv(ref: string, options: { baseDir: string; field: string }): Promise<ResolvedEnv> {
  if (!envIds().includes('kuhn-poker')) registerEnv('kuhn-poker', async () => kuhnPokerEnv as never);
  let imported: Awaited<ReturnType<typeof importEnv>>;
  try {
    imported = await importEnv(ref, { baseDir: options.baseDir });
  } catch (error) {
    if (!ConfigError.isInstance(error)) throw error;
    throw new RunConfigError(`${options.field}: ${error.message.replace(/^env(\.id)? /, '')}`, {
      ...(error.cause !== undefined ? { cause: error.cause } : {}),
    });
  }
  const { definition, module } = imported;
  const training = (module?.training ?? (definition as { training?: unknown }).training) as TrainingHooks | undefined;
  return { definition, ...(training ? { training } : {}) };
}
