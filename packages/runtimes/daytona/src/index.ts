export * from './daytona-runtime.ts';

import { ConfigError, type PluginContext, parseRuntimeOptions } from '@troupe/verifiers';
import { DaytonaRuntime, DaytonaRuntimeOptionsSchema } from './daytona-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "daytona", apiKeyVar = "DAYTONA_API_KEY", … }` in a config. The key is read
 * from the named variable of the environment the caller passes (the CLI passes its own) when the runtime is built (default `DAYTONA_API_KEY`), so it never
 * sits in a config file or a trace.
 */
export function createRuntime(options: unknown = {}, context: PluginContext = {}): DaytonaRuntime {
  if (options === null || typeof options !== 'object') throw new ConfigError('runtime (daytona): options must be a table');
  const { apiKeyVar = 'DAYTONA_API_KEY', ...rest } = options as { apiKeyVar?: string } & Record<string, unknown>;
  const apiKey = rest.apiKey ?? context.env?.[apiKeyVar];
  if (!apiKey) throw new ConfigError(`runtime (daytona): set the API key in ${apiKeyVar} (or runtime.apiKeyVar)`);
  return new DaytonaRuntime(
    parseRuntimeOptions({ schema: DaytonaRuntimeOptionsSchema, value: { ...rest, apiKey }, what: 'runtime (daytona)' }),
  );
}
