// @troupe/runtime-daytona: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export { DaytonaRuntimeOptionsSchema, type DaytonaRuntimeOptions, DaytonaSandbox, DaytonaRuntime } from './daytona-runtime.ts';

import { apiKeyRuntimeEntry } from '@troupe/verifiers/internal';
import { DaytonaRuntime } from './daytona-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "daytona", apiKeyVar = "DAYTONA_API_KEY", … }` in a config; the key is read
 * from that variable of the environment the caller passes (default `DAYTONA_API_KEY`).
 */
export const createRuntime = apiKeyRuntimeEntry({ runtime: DaytonaRuntime, defaultKeyVar: 'DAYTONA_API_KEY' });
