import { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { CreationLimitsSchema } from './creation-limiter.ts';

/** Something that takes warnings (a pino logger fits). Runtimes log ignored options through it. */
export interface RuntimeLogger {
  warn(message: string): void;
}

/**
 * Parses a runtime or sandbox config with `schema`; a bad value fails with a `ConfigError` whose
 * message names the field (`docker.memoryMb: Too small: expected number to be >0`).
 */
export function parseRuntimeOptions<T extends z.ZodType>(options: { schema: T; value: unknown; what: string }): z.infer<T> {
  const result = options.schema.safeParse(options.value ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? `${options.what}.${issue.path.join('.')}` : options.what;
    return `${field}: ${issue.message}`;
  });
  throw new ConfigError(problems.join('; '));
}

/** Bytes of stdout and of stderr a runtime keeps per command when `maxOutputBytes` is not set: 64 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Options every runtime that runs commands itself and collects their output takes (local, Docker,
 * Kubernetes; extend it with the runtime's own, as API-key runtimes extend `ApiKeyRuntimeOptionsSchema`):
 * the creation limits and the output kept per command.
 */
export const ExecRuntimeOptionsSchema = CreationLimitsSchema.extend({
  /**
   * Bytes of stdout and of stderr kept per command (default {@link DEFAULT_MAX_OUTPUT_BYTES}, 64 MiB);
   * the rest is cut and the result's `truncated` set.
   */
  maxOutputBytes: z.number().int().positive().optional(),
});
