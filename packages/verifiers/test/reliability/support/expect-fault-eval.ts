import { expect } from 'vitest';
import { EXPECTED_FAULT_KINDS, type FaultEvalResult } from './fault-eval.ts';

/** The promises a fault eval must keep, shared by the CI-sized and the full runs. */
export function expectFaultEvalHeld(result: FaultEvalResult): void {
  // Every episode is in traces.jsonl exactly once.
  expect(result.lines).toBe(result.episodes);
  expect(result.distinctKeys).toBe(result.episodes);
  // No task asked the model server more often than the retry budget allows.
  expect(result.maxRequestsPerTask).toBeLessThanOrEqual(result.maxRetries + 1);
  // Every failure is a poisoned task or a task whose every attempt hit a fault, recorded as a ProviderError.
  expect(result.unexplainedFailures).toEqual([]);
  expect(result.nonProviderErrors).toEqual([]);
  expect(result.failed).toBeGreaterThanOrEqual(result.poisonedTasks.length);
  // Retried faults are invisible in the result: the episode scores as if nothing happened.
  expect(result.wrongRewards).toBe(0);
  for (const kind of EXPECTED_FAULT_KINDS) expect(result.faultsByKind[kind] ?? 0, `fault ${kind} injected`).toBeGreaterThan(0);
}
