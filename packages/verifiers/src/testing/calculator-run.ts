import { execFileSync } from 'node:child_process';
import { appendFileSync, closeSync, ftruncateSync, openSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { singleAgentEnv } from '../env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../env/env.ts';
import { type EvalResult, runEval } from '../eval/eval-runner.ts';
import type { ModelClient } from '../model/model-client.ts';
import { arithmeticTaskset } from '../task/arithmetic.ts';

/** A model that answers each arithmetic prompt ("What is 2 + 3?") correctly, with no server. */
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

/** Options of {@link calculatorEval}. */
export interface CalculatorEvalOptions {
  /** Resume the run already in `outDir` (default false). */
  resume?: boolean;
  /** Where the eval's progress lines go. */
  log?: (line: string) => void;
}

/**
 * A four-task arithmetic eval answered by {@link calculatorClient} into `outDir`: a real run
 * directory in well under a second, for tests of what reads one (resume, export, the viewer).
 */
export async function calculatorEval(outDir: string, options: CalculatorEvalOptions = {}): Promise<EvalResult> {
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
    resume: options.resume ?? false,
    ...(options.log ? { log: options.log } : {}),
  });
}

/**
 * Rewrites the JSON-lines file at `path` with one line of `bytes` NUL bytes after its first line.
 * The file is sparse, so a line past V8's longest string costs no disk and no time to write.
 */
export function insertHugeLine(path: string, bytes: number): void {
  const [first, ...rest] = readFileSync(path, 'utf8').split('\n').filter(Boolean);
  writeFileSync(path, `${first}\n`);
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, statSync(path).size + bytes);
  } finally {
    closeSync(fd);
  }
  appendFileSync(path, `\n${rest.join('\n')}\n`);
}

/**
 * Makes `path` a FIFO (`mkfifo`) or a symlink to `target`: the two files a reader of a run
 * directory must refuse without blocking or following.
 */
export function plantHostileFile(path: string, kind: 'fifo' | 'symlink', target: string): void {
  if (kind === 'fifo') execFileSync('mkfifo', [path]);
  else {
    writeFileSync(target, 'secret\n');
    symlinkSync(target, path);
  }
}
