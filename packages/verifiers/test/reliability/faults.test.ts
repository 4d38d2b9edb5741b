import { describe, it } from 'vitest';
import { expectFaultEvalHeld } from './support/expect-fault-eval.ts';
import { runFaultEval } from './support/fault-eval.ts';

describe('an eval against a model server injecting 20 % faults (CI size)', () => {
  it('keeps every one of 100 in-process episodes, retries within budget and records exhausted calls as ProviderErrors', async () => {
    const result = await runFaultEval({ episodes: 100, seed: 11, harness: 'null' });
    console.log(`fault eval (null harness): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });

  it('keeps every one of 100 episodes driven over HTTP through the interception server, with the provider error on the trace', async () => {
    const result = await runFaultEval({ episodes: 100, seed: 12, harness: 'fetch-program' });
    console.log(`fault eval (HTTP program): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expectFaultEvalHeld(result);
  });
});
