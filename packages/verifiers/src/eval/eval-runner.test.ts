import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { singleAgentEnv } from '../env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../env/env.ts';
import type { ModelClient } from '../model/model-client.ts';
import { arithmeticTaskset, lastInteger } from '../task/arithmetic.ts';
import { runEval } from './eval-runner.ts';
import { passAtK } from './summary.ts';

/** Answers arithmetic prompts correctly except when told to fail. */
function solverClient(options: { failEvery?: number } = {}): ModelClient {
  let calls = 0;
  return {
    model: 'calc',
    async complete(request) {
      calls++;
      if (options.failEvery && calls % options.failEvery === 0) throw Object.assign(new Error('upstream 500'), { status: 500 });
      const prompt = String(request.messages.at(-1)?.content);
      const expression = prompt.match(/What is (.*)\?/)?.[1] ?? '0';
      const value = Function(`return (${expression})`)() as number;
      return {
        id: `c${calls}`,
        model: 'calc',
        message: { role: 'assistant', content: `The answer is ${value}` },
        finishReason: 'stop',
        usage: { promptTokens: 5, completionTokens: 3 },
      };
    },
  };
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('runEval', () => {
  it('writes one episode per line with a summary, and the built-in taskset scores correct answers', async () => {
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'null' } },
      run: { model: 'calc', client: solverClient() },
    });
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-eval-'));
    const result = await runEval({
      env,
      taskset: arithmeticTaskset({ size: 5 }),
      rollouts: 2,
      concurrency: 3,
      outDir,
      model: 'calc',
    });
    const episodes = lines(join(outDir, 'traces.jsonl'));
    expect(episodes).toHaveLength(10);
    expect(result.summary.rewardMean).toBe(1);
    expect(result.summary.passAtK).toEqual({ 'pass@1': 1, 'pass@2': 1 });
    expect(JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8')).episodes).toBe(10);
  });

  it('on resume re-runs failed and torn episodes and never duplicates one', async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-eval-'));
    const flaky = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'null' } },
      run: { model: 'calc', client: solverClient({ failEvery: 3 }) },
    });
    const first = await runEval({
      env: flaky,
      taskset: arithmeticTaskset({ size: 6 }),
      rollouts: 1,
      concurrency: 1,
      outDir,
      model: 'calc',
    });
    expect(first.summary.episodesFailed).toBe(2);
    expect(first.summary.errorsByType.ProviderError).toBe(2);
    appendFileSync(join(outDir, 'traces.jsonl'), '{"version":1,"id":"torn'); // a crash mid-write
    const healthy = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'null' } },
      run: { model: 'calc', client: solverClient() },
    });
    const logs: string[] = [];
    const second = await runEval({
      env: healthy,
      taskset: arithmeticTaskset({ size: 6 }),
      rollouts: 1,
      concurrency: 2,
      outDir,
      model: 'calc',
      resume: true,
      log: (l) => logs.push(l),
    });
    expect(second.kept).toBe(4);
    expect(second.ran).toBe(2);
    expect(logs.join('\n')).toMatch(/torn last line/);
    const episodes = lines(join(outDir, 'traces.jsonl'));
    const keys = episodes.map((e) => `${e.task.key}#${e.group.index}`);
    expect(new Set(keys).size).toBe(6);
    expect(keys).toHaveLength(6);
    expect(episodes.every((e) => e.ok)).toBe(true);
  });

  it('starts a burst of episodes over several event-loop turns, timers running between them', async () => {
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'null' } },
      run: { model: 'calc', client: solverClient() },
    });
    // Each start costs ≥ 1 ms of synchronous work; the runner's turn budget (10 ms of such work per
    // turn, in a turn's poll and check phases) lets ≤ 2 × 10 + 2 starts through between two timer
    // phases. The ramp it replaced started 32 per turn; starting all at once would start 60.
    let timerPhases = 0;
    const interval = setInterval(() => timerPhases++, 1);
    const startsPerPhase = new Map<number, number>();
    const busyStarts: typeof env = Object.create(env, {
      runEpisode: {
        value: (options: Parameters<typeof env.runEpisode>[0]) => {
          const end = performance.now() + 1;
          while (performance.now() < end);
          startsPerPhase.set(timerPhases, (startsPerPhase.get(timerPhases) ?? 0) + 1);
          return env.runEpisode(options);
        },
      },
    });
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-eval-'));
    try {
      await runEval({ env: busyStarts, taskset: arithmeticTaskset({ size: 60 }), concurrency: 60, outDir, model: 'calc' });
    } finally {
      clearInterval(interval);
    }
    expect(lines(join(outDir, 'traces.jsonl'))).toHaveLength(60);
    expect(Math.max(...startsPerPhase.values())).toBeLessThanOrEqual(22);
    expect(startsPerPhase.size).toBeGreaterThanOrEqual(3);
  });

  it('a failing reward function is an error on the trace, not a silent 0', async () => {
    const env = await Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { harness: 'null' } },
      run: { model: 'calc', client: solverClient() },
    });
    const taskset = arithmeticTaskset({ size: 1 });
    const task = taskset.at(0).with(
      {},
      {
        rewards: [
          {
            name: 'broken',
            fn: () => {
              throw new Error('no answer field');
            },
          },
        ],
      },
    );
    const episode = await env.runEpisode({ task, group: { id: 'g', index: 0 } });
    const trace = episode.traces[0];
    expect(trace?.ok).toBe(false);
    expect(trace?.rewards.broken).toBeNull();
    expect(trace?.errors[0]).toMatchObject({ type: 'RewardError', stage: 'scoring' });
  });
});

describe('passAtK', () => {
  it('is the unbiased estimator 1 − C(n−c,k)/C(n,k)', () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(0.25, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(1 - 3 / 6, 12);
    expect(passAtK(5, 0, 3)).toBe(0);
    expect(passAtK(5, 3, 3)).toBe(1);
  });
  it('lastInteger reads the last integer with commas removed', () => {
    expect(lastInteger('it is 1,234 or maybe -5')).toBe(-5);
    expect(lastInteger('no numbers')).toBeNull();
  });
});
