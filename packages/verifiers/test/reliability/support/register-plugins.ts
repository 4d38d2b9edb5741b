import { registerHarness, registerRuntime } from '../../../src/agent/plugins.ts';
import { FetchProgramHarness } from './fetch-program-harness.ts';
import { MemoryRuntime } from './memory-runtime.ts';

/** Makes `harness = "fetch-program"` and `runtime = "memory"` available to `Env.create`. */
export function registerReliabilityPlugins(): void {
  registerHarness('fetch_program', (options) => new FetchProgramHarness(options as { requestTimeoutMs?: number }));
  registerRuntime('memory', () => new MemoryRuntime());
}
