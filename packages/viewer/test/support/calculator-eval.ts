import { arithmeticTaskset, Env, type ModelClient, runEval, singleAgentEnv } from '@troupe/verifiers';

/** A model that answers each arithmetic prompt ("What is 2 + 3?") correctly. */
export function calculatorClient(): ModelClient {
  let calls = 0;
  return {
    model: 'calc',
    async complete(request) {
      calls++;
      const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
      return {
        id: `c${calls}`,
        model: 'calc',
        message: { role: 'assistant', content: `The answer is ${Function(`return (${expression})`)()}` },
        finishReason: 'stop',
        usage: { promptTokens: 5, completionTokens: 3 },
      };
    },
  };
}

/** A four-task arithmetic eval with {@link calculatorClient} into `outDir`: a real run directory to view. */
export async function calculatorEval(outDir: string) {
  const env = await Env.create({
    definition: singleAgentEnv,
    config: { id: 'single-agent', agent: { harness: 'null' } },
    run: { model: 'calc', client: calculatorClient() },
  });
  return runEval({ env, taskset: arithmeticTaskset({ size: 4 }), rollouts: 1, concurrency: 2, outDir, model: 'calc' });
}
