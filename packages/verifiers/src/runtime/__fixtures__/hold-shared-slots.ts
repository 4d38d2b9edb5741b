// A process that takes `count` sandbox slots from a shared limiter, one after another, holds each
// for `holdMs` and prints `acquire <ms>` / `release <ms>` lines. Used by shared-limits.test.ts.
import { CreationLimiter } from '../creation-limiter.ts';

const [dir, count, holdMs, maxConcurrent, createsPerSecond] = process.argv.slice(2);
const limiter = new CreationLimiter(
  {
    shared: 'test',
    sharedLimitsDir: dir,
    maxConcurrent: Number(maxConcurrent) || undefined,
    createsPerSecond: Number(createsPerSecond) || undefined,
  },
  'test',
);
for (let index = 0; index < Number(count); index++) {
  const slot = await limiter.acquire();
  console.log(`acquire ${Date.now()}`);
  await new Promise((resolve) => setTimeout(resolve, Number(holdMs)));
  console.log(`release ${Date.now()}`);
  slot.release();
}
