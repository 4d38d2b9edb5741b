import { describe, it } from 'vitest';
import { expectFaultEvalHeld } from './support/expect-fault-eval.ts';
import { runFaultEval } from './support/fault-eval.ts';

describe('an eval against a model server injecting 20 % faults (full size)', () => {
  it('keeps every one of 500 in-process episodes, retries within budget and records exhausted calls as ProviderErrors', async () => {
    const result = await runFaultEval({ episodes: 500, seed: 21, harness: 'null' });
    console.log(`fault eval 500 (null harness): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });

  it('keeps every one of 500 episodes driven over HTTP through the interception server', async () => {
    const result = await runFaultEval({ episodes: 500, seed: 22, harness: 'fetch-program' });
    console.log(`fault eval 500 (HTTP program): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });
});
