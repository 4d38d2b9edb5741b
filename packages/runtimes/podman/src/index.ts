// @troupe/runtime-podman: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export { PodmanRuntimeOptionsSchema, type PodmanRuntimeOptions, PODMAN_DEFAULT_SOCKET, PodmanRuntime } from './podman-runtime.ts';

import { ConfigError, parseRuntimeOptions } from '@troupe/verifiers';
import { PodmanRuntime, PodmanRuntimeOptionsSchema } from './podman-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "podman", image = "…", socketPath = "…" }` in a config.
 * The socket defaults to rootful podman's `/run/podman/podman.sock`.
 */
export function createRuntime(options: unknown = {}): PodmanRuntime {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new ConfigError('runtime (podman): options must be a table');
  return new PodmanRuntime(parseRuntimeOptions({ schema: PodmanRuntimeOptionsSchema, value: options, what: 'runtime (podman)' }));
}
