import type { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';

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
