import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';

/** Options every external-program harness accepts. */
export const CliHarnessOptionsSchema = z
  .object({
    /** Host directory holding cached installs (default `~/.cache/troupe/harnesses`). */
    cacheDir: z.string().min(1).optional(),
    /** Kills the program after this many milliseconds (the agent's own timeout still applies). */
    timeoutMs: z.number().int().positive().optional(),
    /** Extra environment variables for the program (never the rollout secret: that is set by the harness). */
    env: z.record(z.string(), z.string()).optional(),
    /** Extra command-line arguments appended to the program's launch command. */
    extraArgs: z.array(z.string()).optional(),
    /** Keep the per-run scratch directory (config, HOME) after the run, for debugging. */
    keepScratch: z.boolean().optional(),
  })
  .strict();
/**
 * The options every external-program harness accepts; {@link CliHarnessOptionsSchema} documents each
 * field and its unit, and `parseHarnessOptions` throws a `ConfigError` naming a bad field.
 */
export type CliHarnessOptions = z.infer<typeof CliHarnessOptionsSchema>;

/**
 * Validates harness options with `schema`; a bad option throws a `ConfigError` naming the
 * harness and the field (`harness codex: options.timeoutMs: Too small …`).
 */
export function parseHarnessOptions<S extends z.ZodType>(options: { harnessId: string; schema: S; value: unknown }): z.infer<S> {
  const parsed = options.schema.safeParse(options.value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.length ? `options.${issue.path.join('.')}` : 'options';
  throw new ConfigError(`harness ${options.harnessId}: ${field}: ${issue?.message ?? 'invalid'}`);
}
