import { describe, expect, it } from 'vitest';
import type { Env } from '../env/env.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { preflightRuntimes } from './preflight.ts';
import type { Runtime } from './runtime.ts';

function runtime(id: string, answer: () => Promise<void>, calls: string[]): Runtime {
  return {
    id,
    capabilities: { container: true, networkIsolation: true },
    createSandbox: () => Promise.reject(new Error('not used')),
    preflight: () => {
      calls.push(id);
      return answer();
    },
  };
}

const envOf = (id: string, roles: Record<string, Runtime>) =>
  ({ id, baseAgents: Object.fromEntries(Object.entries(roles).map(([role, r]) => [role, { runtime: r }])) }) as unknown as Env;

describe('runtime preflight before a run', () => {
  it('checks each runtime once across roles and envs', async () => {
    const calls: string[] = [];
    const shared = runtime('docker', async () => {}, calls);
    const local: Runtime = {
      id: 'local',
      capabilities: { container: false, networkIsolation: false },
      createSandbox: () => Promise.reject(new Error('no')),
    };
    await preflightRuntimes([envOf('a', { solver: shared, judge: shared }), envOf('b', { player: shared, other: local })]);
    expect(calls).toEqual(['docker']);
  });

  it('names the env, the role and the engine when a runtime does not answer', async () => {
    const calls: string[] = [];
    const down = runtime(
      'podman',
      () => Promise.reject(new Error('podman: the engine at /run/p.sock does not answer (ECONNREFUSED)')),
      calls,
    );
    const error = await preflightRuntimes([envOf('judge-env', { judge: down })]).catch((caught: unknown) => caught);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      'env judge-env, role judge: runtime podman failed its preflight: podman: the engine at /run/p.sock does not answer (ECONNREFUSED)',
    );
  });
});
