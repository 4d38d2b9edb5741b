import { describe, expect, it } from 'vitest';
import { EXPECTED_FAULT_KINDS, runFaultEval, type FaultEvalResult } from './support/fault-eval.ts';

/** The assertions shared by the CI-sized and the full fault runs. */
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

describe('an eval against a model server injecting 20 % faults (CI size)', () => {
  it('keeps every one of 100 in-process episodes, retries within budget and records exhausted calls as ProviderErrors', async () => {
    const result = await runFaultEval({ episodes: 100, seed: 11, harness: 'null' });
    console.log(`fault eval (null harness): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });

  it('keeps every one of 100 episodes driven over HTTP through the interception server, with the provider error on the trace', async () => {
    const result = await runFaultEval({ episodes: 100, seed: 12, harness: 'fetch-program' });
    console.log(`fault eval (HTTP program): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });
});
