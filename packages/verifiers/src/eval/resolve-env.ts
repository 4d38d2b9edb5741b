import type { InterceptionHost } from '../agent/agent.ts';
import type { ClientConfig } from '../agent/agent-config.ts';
import { Env, type EnvDefinition } from '../env/env.ts';
import { loadEnvDefinition, loadTaskset } from '../env/registry.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import type { ModelClient } from '../model/model-client.ts';
import type { Taskset } from '../task/taskset.ts';
import type { EvalConfig } from './eval-config.ts';

/**
 * The flags that set one field on every role of the env (`--harness`, `--runtime`,
 * `--max-turns`); they beat the config file's per-role values.
 */
export interface RoleFlags {
  /** Harness id for every role. */
  harness?: string;
  /** Runtime id for every role. */
  runtime?: string;
  /** Model calls per agent run, for every role. */
  maxTurns?: number;
}

/** True when at least one role flag was given. */
export function hasRoleFlags(flags: RoleFlags): boolean {
  return Object.values(flags).some((value) => value !== undefined);
}

/** An eval config with its env definition loaded and the role flags applied to every role. */
export interface ResolvedEnvConfig {
  definition: EnvDefinition<string, Record<string, unknown>>;
  /** `config.env` with the role flags merged into each role's table. */
  envConfig: Record<string, unknown>;
  /** The whole config as it is saved to `config.json` (and compared on `--resume`). */
  cleanConfig: EvalConfig;
  /** The taskset the config names (`undefined`: the env's own taskset). */
  tasksetRef: string | { id: string } | undefined;
}

/**
 * Loads the env the config names (an id or a module path) and applies the role flags to each of
 * its roles: the one way `troupe eval`, `troupe validate` and `troupe debug` read an env config.
 */
export async function resolveEnvConfig(options: { config: EvalConfig; roleFlags?: RoleFlags }): Promise<ResolvedEnvConfig> {
  const { config, roleFlags = {} } = options;
  const definition = await loadEnvDefinition(config.env.id);
  const envConfig: Record<string, unknown> = { ...config.env };
  const patch = Object.fromEntries(Object.entries(roleFlags).filter(([, value]) => value !== undefined));
  if (Object.keys(patch).length > 0) {
    for (const role of Object.keys(definition.roles)) {
      const current = (envConfig[role] as Record<string, unknown> | undefined) ?? {};
      envConfig[role] = { ...current, ...patch };
    }
  }
  const tasksetRef =
    (envConfig.taskset as string | { id: string } | undefined) ?? (definition.taskset ? undefined : 'arithmetic');
  return { definition, envConfig, cleanConfig: { ...config, env: envConfig as EvalConfig['env'] }, tasksetRef };
}

/**
 * Builds the env (harnesses and runtimes resolved, pairing checks run) and loads its taskset,
 * exactly as `troupe eval` runs them. `makeClient` builds every model client (the CLI reads API
 * keys there); nothing here calls a model.
 */
export async function createEvalEnv(options: {
  resolved: ResolvedEnvConfig;
  config: EvalConfig;
  makeClient: (config: ClientConfig, model: string) => ModelClient;
  interception?: () => Promise<InterceptionHost>;
  log?: (line: string, options?: { fileOnly?: boolean }) => void;
}): Promise<{ env: Env; taskset: Taskset }> {
  const { resolved, config, makeClient } = options;
  const env = await Env.create({
    definition: resolved.definition,
    config: resolved.envConfig,
    run: {
      model: config.model,
      client: makeClient(config.client, config.model),
      sampling: config.sampling,
      makeClient,
    },
    ...(options.interception ? { interception: options.interception } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const taskset =
    resolved.tasksetRef !== undefined ? await loadTaskset(resolved.tasksetRef) : await resolved.definition.taskset?.(env.options);
  // resolveEnvConfig names `arithmetic` when the env has no taskset of its own.
  if (!taskset) throw new ConfigError(`env ${resolved.definition.id}: no taskset`);
  return { env, taskset };
}
