export * from './e2b-runtime.ts';

import { ConfigError, type PluginContext, parseRuntimeOptions } from '@troupe/verifiers';
import { E2BRuntime, E2BRuntimeOptionsSchema } from './e2b-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "e2b", apiKeyVar = "E2B_API_KEY", … }` in a config. The key is read
 * from the named variable of the environment the caller passes (the CLI passes its own) when the runtime is built (default `E2B_API_KEY`), so it never
 * sits in a config file or a trace.
 */
export function createRuntime(options: unknown = {}, context: PluginContext = {}): E2BRuntime {
  if (options === null || typeof options !== 'object') throw new ConfigError('runtime (e2b): options must be a table');
  const { apiKeyVar = 'E2B_API_KEY', ...rest } = options as { apiKeyVar?: string } & Record<string, unknown>;
  const apiKey = rest.apiKey ?? context.env?.[apiKeyVar];
  if (!apiKey) throw new ConfigError(`runtime (e2b): set the API key in ${apiKeyVar} (or runtime.apiKeyVar)`);
  return new E2BRuntime(
    parseRuntimeOptions({ schema: E2BRuntimeOptionsSchema, value: { ...rest, apiKey }, what: 'runtime (e2b)' }),
  );
}
