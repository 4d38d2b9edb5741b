export * from './docker-exec.ts';
export * from './docker-runtime.ts';
export * from './docker-sandbox.ts';
export * from './host-forwarder.ts';
export * from './tar-archive.ts';

import { ConfigError, parseRuntimeOptions } from '@troupe/verifiers';
import { DockerRuntime, DockerRuntimeOptionsSchema } from './docker-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "docker", image = "…", socketPath = "…" }` in a config.
 * The socket defaults to `/var/run/docker.sock`.
 */
export function createRuntime(options: unknown = {}): DockerRuntime {
  if (options === null || typeof options !== 'object') throw new ConfigError('runtime (docker): options must be a table');
  return new DockerRuntime(parseRuntimeOptions({ schema: DockerRuntimeOptionsSchema, value: options, what: 'runtime (docker)' }));
}
