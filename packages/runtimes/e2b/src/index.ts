// @troupe/runtime-e2b: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export { E2BRuntimeOptionsSchema, type E2BRuntimeOptions, E2BSandbox, E2BRuntime } from './e2b-runtime.ts';

import { apiKeyRuntimeEntry } from '@troupe/verifiers/internal';
import { E2BRuntime } from './e2b-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "e2b", apiKeyVar = "E2B_API_KEY", … }` in a config; the key is read
 * from that variable of the environment the caller passes (default `E2B_API_KEY`).
 */
export const createRuntime = apiKeyRuntimeEntry({ runtime: E2BRuntime, defaultKeyVar: 'E2B_API_KEY' });
