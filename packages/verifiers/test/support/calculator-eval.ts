import { singleAgentEnv } from '../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../src/env/env.ts';
import { runEval } from '../../src/eval/eval-runner.ts';
import type { ModelClient } from '../../src/model/model-client.ts';
import { arithmeticTaskset } from '../../src/task/arithmetic.ts';

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

/** A four-task arithmetic eval with {@link calculatorClient} into `outDir` (resumed when asked). */
export async function calculatorEval(outDir: string, resume: boolean, log?: (line: string) => void) {
  const env = await Env.create({
    definition: singleAgentEnv,
    config: { id: 'single-agent', agent: { harness: 'null' } },
    run: { model: 'calc', client: calculatorClient() },
  });
  return runEval({
    env,
    taskset: arithmeticTaskset({ size: 4 }),
    rollouts: 1,
    concurrency: 2,
    outDir,
    model: 'calc',
    resume,
    ...(log ? { log } : {}),
  });
}
