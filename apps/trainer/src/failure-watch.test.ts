import { EnvError, Episode } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { FailureWatch, TrainingStoppedError } from './failure-watch.ts';

const step = (n: number, failed: number, episodes = 4) => ({
  step: n,
  'train/a/episodes': episodes,
  'train/a/failed_episodes': failed,
});

describe('FailureWatch', () => {
  it('stops at a first step whose every episode failed, naming the endpoint', () => {
    const watch = new FailureWatch({ stopAfter: 5, endpoints: new Map([['a', ['http://127.0.0.1:9/v1']]]) });
    const error = (() => {
      try {
        watch.onStep(step(1, 4));
      } catch (e) {
        return e;
      }
    })() as TrainingStoppedError;
    expect(error).toBeInstanceOf(TrainingStoppedError);
    expect(error.step).toBe(1);
    expect(error.message).toMatch(
      /every episode of the run's first step \(1\) failed \(4 of 4\).*endpoints: http:\/\/127\.0\.0\.1:9\/v1/,
    );
  });

  it('counts failures for exit 3 and stops only after stopAfter all-failed steps in a row', () => {
    const watch = new FailureWatch({ stopAfter: 3, endpoints: new Map() });
    watch.onStep(step(1, 1));
    watch.onStep(step(2, 4));
    watch.onStep(step(3, 4));
    watch.onStep(step(4, 0));
    watch.onStep(step(5, 4));
    watch.onStep(step(6, 4));
    expect(watch.failedEpisodes).toBe(17);
    expect(() => watch.onStep(step(7, 4))).toThrow(/every episode of 3 consecutive steps \(through 7\) failed/);
  });

  it("stops with the user's own error's stack when a wrapper error caused it (their file and line)", () => {
    const watch = new FailureWatch({ stopAfter: 5, endpoints: new Map() });
    const episode = new Episode({ env: { id: 'a' }, task: { idx: 0 } as never, group: { id: 'g', index: 0 } as never });
    const userError = new Error('the env broke');
    userError.stack = 'Error: the env broke\n    at run (file:///home/me/my-env.ts:22:11)';
    episode.recordError(new EnvError('a: the env broke', { cause: userError }), 'env');
    watch.observe('a', episode);
    expect(() => watch.onStep(step(1, 4))).toThrow(
      /first error \(source a, stage env\): EnvError: a: the env broke\n {2}caused by Error: the env broke\n {4}at run \(file:\/\/\/home\/me\/my-env\.ts:22:11\)$/,
    );
  });
});
