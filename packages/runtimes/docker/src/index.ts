// @troupe/runtime-docker: the Docker runtime, its sandboxes and their plumbing, and the plugin entry (`createRuntime`).

// Exec in containers.
export { runDockerExec, type DockerExecRun } from './docker-exec.ts';
// The Docker runtime.
export {
  createDockerRuntime,
  SANDBOX_LABEL,
  RUN_LABEL,
  DockerRuntimeOptionsSchema,
  type DockerRuntimeOptions,
  DockerRuntime,
} from './docker-runtime.ts';
// Docker sandboxes.
export { type DockerSandboxInit, DockerSandbox } from './docker-sandbox.ts';
// The host forwarder for no-network containers.
export { HostForwarder } from './host-forwarder.ts';
// Tar archives in and out of containers.
export { packFile, packHostPath, readFirstEntry, extractToHost } from './tar-archive.ts';

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
