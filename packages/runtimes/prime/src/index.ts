// @troupe/runtime-prime: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export {
  PrimeRuntimeOptionsSchema,
  type PrimeRuntimeOptions,
  PrimeSandboxSchema,
  PrimeCommandResponseSchema,
  PrimeSandboxApi,
  PrimeSandbox,
  PrimeRuntime,
} from './prime-runtime.ts';

import { apiKeyRuntimeEntry } from '@troupe/verifiers/internal';
import { PrimeRuntime } from './prime-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "prime", apiKeyVar = "PRIME_API_KEY", … }` in a config; the key is read
 * from that variable of the environment the caller passes (default `PRIME_API_KEY`).
 */
export const createRuntime = apiKeyRuntimeEntry({ runtime: PrimeRuntime, defaultKeyVar: 'PRIME_API_KEY' });
