import { expect } from 'vitest';
import type { CrashLoopOptions, CrashLoopResult } from './crash-loop.ts';

/** The promises a crash loop must keep, shared by the CI-sized and the full runs. */
export function expectCrashLoopHeld(options: CrashLoopOptions, result: CrashLoopResult): void {
  expect(result.kills).toHaveLength(options.kills);
  expect(result.finalExitCode, result.finalOutput).toBe(0);
  // Every episode exactly once, all parsable, all complete and correct.
  expect(result.unparsable).toBe(0);
  expect(result.lines).toBe(result.expected);
  expect(result.distinctKeys).toBe(result.expected);
  expect(result.okEpisodes).toBe(result.expected);
  expect(result.correctEpisodes).toBe(result.expected);
  // Each torn line was detected by the next resume (and its episode re-run, or the count above would be short).
  expect(result.tornDetected).toBeGreaterThanOrEqual(result.torn);
}
