import type { Env } from '../env/env.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import type { Runtime } from './runtime.ts';

/**
 * Checks, before a run creates anything, that every runtime the envs' roles use answers (each
 * runtime once, in role order; see `Runtime.preflight`). A runtime that does not is a `ConfigError`
 * naming the env, the role and the engine's own message, so the CLI exits 2 with nothing written.
 */
export async function preflightRuntimes(envs: readonly Env[]): Promise<void> {
  const checked = new Set<Runtime>();
  for (const env of envs) {
    for (const [role, agent] of Object.entries(env.baseAgents)) {
      const runtime = agent.runtime;
      if (checked.has(runtime)) continue;
      checked.add(runtime);
      try {
        await runtime.preflight?.();
      } catch (error) {
        throw new ConfigError(
          `env ${env.id}, role ${role}: runtime ${runtime.id} failed its preflight: ${(error as Error).message}`,
        );
      }
    }
  }
}
