import { describe, expect, it } from 'vitest';
import { tinyTrainConfig, trainUninterrupted, trainWithKills } from './support/trainer-crash.ts';

describe('the trainer app under SIGKILL (full size)', () => {
  it('killed three times, between checkpoints too, ends where an uninterrupted run ends, with every step metric once', async () => {
    const config = tinyTrainConfig({ maxSteps: 8, checkpointEvery: 2 });
    const reference = await trainUninterrupted(config);
    // Kill right after checkpoint 2, then after metrics of step 5 (checkpoint 4 on disk), then after step 7.
    const { outcome, killedAt, resumedFrom } = await trainWithKills(config, [2, 0, 0], [undefined, 5, 7]);
    console.log(`trainer crash loop: ${JSON.stringify({ killedAt, resumedFrom, metricSteps: outcome.metricSteps })}`);
    expect(outcome.step).toBe(reference.step);
    expect(outcome.optimizerStep).toBe(reference.optimizerStep);
    expect(outcome.algorithm).toEqual(reference.algorithm);
    expect(outcome.tensorsSha256).toBe(reference.tensorsSha256);
    expect(outcome.policyTable).toBe(reference.policyTable);
    expect(outcome.metricSteps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
