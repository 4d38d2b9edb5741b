import { EnvError, Episode } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { FailedSteps, TrainingStoppedError } from './failed-steps.ts';
import type { ScoredGroup } from './types.ts';

function stepGroups(failed: number, ok = 0, error: () => Error = () => new Error('connect ECONNREFUSED')): ScoredGroup[] {
  const episodes = Array.from({ length: failed + ok }, (_, i) => {
    const episode = new Episode({ env: { id: 'a' }, task: { idx: i } as never, group: { id: 'g', index: i } as never });
    if (i < failed) episode.recordError(error(), 'env');
    return episode;
  });
  return [{ source: 'a', version: 0, episodes }];
}

describe('FailedSteps', () => {
  it('stops at the first step when it failed whole, naming the endpoints', () => {
    const rule = new FailedSteps({ stopAfter: 5, endpoints: ['http://127.0.0.1:9/v1'] });
    let error: unknown;
    try {
      rule.observe(stepGroups(4), 1);
    } catch (e) {
      error = e;
    }
    expect(TrainingStoppedError.isInstance(error)).toBe(true);
    expect((error as TrainingStoppedError).step).toBe(1);
    expect((error as Error).message).toMatch(
      /^every episode of the run's first step \(step 1\) failed \(4 episodes\); first error \(source a, stage env\): Error: connect ECONNREFUSED; endpoints: http:\/\/127\.0\.0\.1:9\/v1$/,
    );
  });

  it('lets a step with any episode that did not fail reset the count, and stops after stopAfter in a row', () => {
    const rule = new FailedSteps({ stopAfter: 3, endpoints: [] });
    expect(rule.observe(stepGroups(1, 3), 1)).toBe(false);
    expect(rule.observe(stepGroups(4), 2)).toBe(true);
    expect(rule.observe(stepGroups(4), 2)).toBe(true);
    expect(rule.observe(stepGroups(3, 1), 2)).toBe(false);
    expect(rule.observe(stepGroups(4), 3)).toBe(true);
    expect(rule.observe(stepGroups(4), 3)).toBe(true);
    expect(() => rule.observe(stepGroups(4), 3)).toThrow(
      /^every episode of 3 steps in a row \(stop_after_failed_steps; step 3\) failed/,
    );
  });

  it("stops with the user's own error's stack when a wrapper error caused it (their file and line)", () => {
    const rule = new FailedSteps({ stopAfter: 5, endpoints: [] });
    const userError = new Error('the env broke');
    userError.stack = 'Error: the env broke\n    at run (file:///home/me/my-env.ts:22:11)';
    expect(() =>
      rule.observe(
        stepGroups(2, 0, () => new EnvError('a: the env broke', { cause: userError })),
        1,
      ),
    ).toThrow(
      /first error \(source a, stage env\): EnvError: a: the env broke\n {2}caused by Error: the env broke\n {4}at run \(file:\/\/\/home\/me\/my-env\.ts:22:11\)$/,
    );
  });

  it('refuses a stopAfter below 1', () => {
    expect(() => new FailedSteps({ stopAfter: 0, endpoints: [] })).toThrow(/stopAfterFailedSteps/);
  });
});
