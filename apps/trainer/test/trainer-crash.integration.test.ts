import { describe, expect, it } from 'vitest';
import { tinyProposerSolverConfig, tinyTrainConfig, trainUninterrupted, trainWithKills } from './support/trainer-crash.ts';

describe('the trainer app under SIGKILL (CI size)', () => {
  it('killed after a checkpoint and resumed, ends where an uninterrupted run ends: same step, optimizer, algorithm state and weights', async () => {
    const config = tinyTrainConfig({ maxSteps: 4, checkpointEvery: 1 });
    const reference = await trainUninterrupted(config);
    const { outcome, killedAt, resumedFrom } = await trainWithKills(config, [2]);
    console.log(
      `trainer crash: ${JSON.stringify({ killedAt, resumedFrom, reference: { ...reference, policyTable: undefined }, outcome: { ...outcome, policyTable: undefined } })}`,
    );
    expect(resumedFrom[0]).toBeGreaterThanOrEqual(2);
    expect(outcome.step).toBe(reference.step);
    expect(outcome.optimizerStep).toBe(reference.optimizerStep);
    expect(outcome.algorithm).toEqual(reference.algorithm);
    expect(outcome.tensorsSha256).toBe(reference.tensorsSha256);
    expect(outcome.policyTable).toBe(reference.policyTable);
    // Every step's metrics exactly once.
    expect(outcome.metricSteps).toEqual([1, 2, 3, 4]);
  });

  it('proposer-solver as the showcase plays it (executed claims, Hierarchical GRPO): killed after a checkpoint and resumed, ends where an uninterrupted run ends', async () => {
    const config = tinyProposerSolverConfig({ maxSteps: 4, checkpointEvery: 1 });
    const reference = await trainUninterrupted(config);
    const { outcome, resumedFrom } = await trainWithKills(config, [2]);
    expect(resumedFrom[0]).toBeGreaterThanOrEqual(2);
    expect(outcome.step).toBe(reference.step);
    expect(outcome.optimizerStep).toBe(reference.optimizerStep);
    expect(outcome.tensorsSha256).toBe(reference.tensorsSha256);
    expect(outcome.metricSteps).toEqual([1, 2, 3, 4]);
  });
});
