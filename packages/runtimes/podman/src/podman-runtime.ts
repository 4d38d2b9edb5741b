import { DockerRuntime, DockerRuntimeOptionsSchema } from '@troupe/runtime-docker';
import type { z } from 'zod';

/**
 * Config of the `podman` runtime: the Docker runtime's options (image, workdir, cpu, memoryMb,
 * network, egress allow list, env, labels, creation limits, …), sent to podman's Docker-compatible
 * API. `socketPath` defaults to rootful podman's `/run/podman/podman.sock` (rootless podman listens
 * on `$XDG_RUNTIME_DIR/podman/podman.sock`; start either with `podman system service`).
 */
export const PodmanRuntimeOptionsSchema = DockerRuntimeOptionsSchema;
/**
 * The `podman` runtime's options, as `new PodmanRuntime(options)` and the agent config's
 * `runtime = { id = "podman", … }` take them; {@link PodmanRuntimeOptionsSchema} documents each field.
 */
export type PodmanRuntimeOptions = z.infer<typeof PodmanRuntimeOptionsSchema>;

/** Default socket of a rootful `podman system service`. */
export const PODMAN_DEFAULT_SOCKET = '/run/podman/podman.sock';

/**
 * Sandboxes as podman containers, driven through podman's Docker-compatible REST API
 * (`podman system service`) by the Docker runtime: the same labels, no network unless allowed,
 * process-tree kills through the exec pid file, files through the archive API. Options errors
 * name `podman.<field>`; sandbox ids start with `podman-` and each sandbox's `runtime` is `podman`.
 */
export class PodmanRuntime extends DockerRuntime {
  static override readonly runtimeId: string = 'podman';
  static override readonly defaultSocketPath: string = PODMAN_DEFAULT_SOCKET;
}
