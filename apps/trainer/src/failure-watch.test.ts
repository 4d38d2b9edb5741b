import { Episode } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { FailureWatch } from './failure-watch.ts';

describe('FailureWatch', () => {
  it('counts every failed episode it sees, for exit 3', () => {
    const watch = new FailureWatch();
    const ok = new Episode({ env: 'a', task: { id: 't' } } as never);
    const failed = new Episode({ env: 'a', task: { id: 't' } } as never);
    failed.recordError(new Error('down'), 'agent');
    for (const episode of [ok, failed, failed, ok, failed]) watch.observe('a', episode);
    expect(watch.failedEpisodes).toBe(3);
  });
});
