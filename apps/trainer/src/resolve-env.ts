import type { EvaluationPolicy, TrainingHooks } from '@troupe/prime-rl/orchestrator';
import { ConfigError, type EnvDefinition, importEnv } from '@troupe/verifiers';

/**
 * A fixed opponent an env module declares (its `opponents` export, or the definition's
 * `opponents`), by name: `troupe crossplay --opponent <name>` plays it. `create` returns a client
 * that plays the env's seats and, when the env's evaluator can read it, reply probabilities.
 */
export interface EnvOpponent {
  description?: string;
  create(context: { seed: number; options: Record<string, unknown> }): Omit<EvaluationPolicy, 'version'>;
}

/** An env definition with the training hooks and fixed opponents its module declares. */
export interface ResolvedEnv {
  definition: EnvDefinition<string, Record<string, unknown>>;
  training?: TrainingHooks;
  opponents?: Readonly<Record<string, EnvOpponent>>;
}

/**
 * Resolves a source's `env` with the loader `troupe eval` uses (`importEnv`): a registry id, a
 * module file (`./envs/my-env.ts`, `.mts`, `.mjs`, `.js`; relative to `baseDir`), or an installed
 * package (`@troupe/env-<id>`, or a package named in full). The module's `training` export (or the
 * definition's `training`) carries its training hooks, its `opponents` export (or the
 * definition's) its fixed opponents. Errors name the field; the module's own error stays the
 * `cause`.
 */
export async function resolveEnv(ref: string, options: { baseDir: string; field: string }): Promise<ResolvedEnv> {
  let imported: Awaited<ReturnType<typeof importEnv>>;
  try {
    imported = await importEnv(ref, { baseDir: options.baseDir });
  } catch (error) {
    if (!ConfigError.isInstance(error)) throw error;
    throw new ConfigError(`${options.field}: ${error.message.replace(/^env(\.id)? /, '')}`, {
      ...(error.cause !== undefined ? { cause: error.cause } : {}),
    });
  }
  const { definition, module } = imported;
  const declared = (name: string) => module?.[name] ?? (definition as unknown as Record<string, unknown>)[name];
  const training = declared('training') as TrainingHooks | undefined;
  const opponents = declared('opponents') as Record<string, EnvOpponent> | undefined;
  return { definition, ...(training ? { training } : {}), ...(opponents ? { opponents } : {}) };
}
