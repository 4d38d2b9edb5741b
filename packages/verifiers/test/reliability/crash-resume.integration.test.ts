import { describe, it } from 'vitest';
import { type CrashLoopOptions, runCrashLoop } from './support/crash-loop.ts';
import { expectCrashLoopHeld } from './support/expect-crash-loop.ts';

describe('troupe eval under SIGKILL (CI size)', () => {
  it('after 3 SIGKILLs at random points and a torn last line, --resume ends with every episode exactly once', async () => {
    const options: CrashLoopOptions = { kills: 3, seed: 3, tasks: 60, rollouts: 2, tearAfter: [2] };
    const result = await runCrashLoop(options);
    console.log(`crash loop: ${JSON.stringify({ ...result, finalOutput: undefined })}`);
    expectCrashLoopHeld(options, result);
  });
});
