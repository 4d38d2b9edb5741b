import { ConfigError } from '../errors/troupe-error.ts';
import type { Runtime } from './runtime.ts';

/**
 * Checks, before a run creates anything, that every runtime the envs' roles use answers, then the
 * envs' own runtimes (`Env.runtimes`; each runtime once, in that order; see `Runtime.preflight`). A
 * runtime that does not is a `ConfigError` naming the env, the role (or `env.<name>`) and the
 * engine's own message, so the CLI exits 2 with nothing written.
 */
export async function preflightRuntimes(
  envs: readonly {
    id: string;
    baseAgents: Readonly<Record<string, { readonly runtime: Runtime }>>;
    runtimes?: Readonly<Record<string, Runtime>>;
  }[],
): Promise<void> {
  const checked = new Set<Runtime>();
  for (const env of envs) {
    const uses: Array<[string, Runtime]> = [
      ...Object.entries(env.baseAgents).map(([role, agent]): [string, Runtime] => [`role ${role}`, agent.runtime]),
      ...Object.entries(env.runtimes ?? {}).map(([name, runtime]): [string, Runtime] => [`env.${name}`, runtime]),
    ];
    for (const [use, runtime] of uses) {
      if (checked.has(runtime)) continue;
      checked.add(runtime);
      try {
        await runtime.preflight?.();
      } catch (error) {
        throw new ConfigError(`env ${env.id}, ${use}: runtime ${runtime.id} failed its preflight: ${(error as Error).message}`);
      }
    }
  }
}
