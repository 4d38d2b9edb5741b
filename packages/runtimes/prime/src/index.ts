export * from './prime-runtime.ts';

import { ConfigError, type PluginContext, parseRuntimeOptions } from '@troupe/verifiers';
import { PrimeRuntime, PrimeRuntimeOptionsSchema } from './prime-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "prime", apiKeyVar = "PRIME_API_KEY", … }` in a config. The key is read
 * from the named variable of the environment the caller passes (the CLI passes its own) when the runtime is built (default `PRIME_API_KEY`), so it never
 * sits in a config file or a trace.
 */
export function createRuntime(options: unknown = {}, context: PluginContext = {}): PrimeRuntime {
  if (options === null || typeof options !== 'object') throw new ConfigError('runtime (prime): options must be a table');
  const { apiKeyVar = 'PRIME_API_KEY', ...rest } = options as { apiKeyVar?: string } & Record<string, unknown>;
  const apiKey = rest.apiKey ?? context.env?.[apiKeyVar];
  if (!apiKey) throw new ConfigError(`runtime (prime): set the API key in ${apiKeyVar} (or runtime.apiKeyVar)`);
  return new PrimeRuntime(
    parseRuntimeOptions({ schema: PrimeRuntimeOptionsSchema, value: { ...rest, apiKey }, what: 'runtime (prime)' }),
  );
}
