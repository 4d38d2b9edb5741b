import { describe, it } from 'vitest';
import { type CrashLoopOptions, runCrashLoop } from './support/crash-loop.ts';
import { expectCrashLoopHeld } from './support/expect-crash-loop.ts';

describe('troupe eval under SIGKILL (full size)', () => {
  it('after 10 SIGKILLs at random points and three torn last lines, --resume ends with every episode exactly once', async () => {
    const options: CrashLoopOptions = { kills: 10, seed: 10, tasks: 100, rollouts: 3, tearAfter: [2, 5, 8] };
    const result = await runCrashLoop(options);
    console.log(`crash loop: ${JSON.stringify({ ...result, finalOutput: undefined })}`);
    expectCrashLoopHeld(options, result);
  });
});
