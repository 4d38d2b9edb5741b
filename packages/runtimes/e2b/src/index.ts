export * from './e2b-runtime.ts';

import { apiKeyRuntimeEntry } from '@troupe/verifiers';
import { E2BRuntime, E2BRuntimeOptionsSchema } from './e2b-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "e2b", apiKeyVar = "E2B_API_KEY", … }` in a config; the key is read
 * from that variable of the environment the caller passes (default `E2B_API_KEY`).
 */
export const createRuntime = apiKeyRuntimeEntry({
  id: 'e2b',
  defaultKeyVar: 'E2B_API_KEY',
  schema: E2BRuntimeOptionsSchema,
  build: (options) => new E2BRuntime(options),
});
