import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Task, Taskset } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { train } from './run.ts';
import { vocabularyWarnings, ZERO_REWARD_STEPS, ZeroRewardWatch } from './vocabulary-watch.ts';

const tasks = (answers: unknown[]) =>
  Taskset.fromTasks(
    't',
    answers.map((answer, i) => new Task({ idx: i, prompt: 'q', answer } as never)),
  );
const ids: Record<string, number> = { red: 7, green: 8, '42': 9 };
const tokenId = (word: string) => ids[word] ?? 1;

describe('vocabularyWarnings', () => {
  it('names the answer words the tokenizer does not know, per source', () => {
    const lines = vocabularyWarnings({
      sources: [{ name: 'colours', taskset: tasks(['red', 'blue', 'green', 'light blue', 42, 43]) }],
      tokenId,
      unknownId: 1,
      sample: 100,
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^VocabularyWarning: source colours: 3 answer word\(s\) of its tasks \(6 of 6 declare data\.answer\) the policy can never emit: "blue", "light", "43"; reward stays 0/,
    );
    expect(lines[0]).toContain('[policy] vocabulary');
  });

  it('says nothing when every answer can be said, or when tasks declare no answer', () => {
    expect(
      vocabularyWarnings({ sources: [{ name: 'a', taskset: tasks(['red', 42]) }], tokenId, unknownId: 1, sample: 100 }),
    ).toEqual([]);
    expect(
      vocabularyWarnings({
        sources: [{ name: 'a', taskset: tasks([undefined, undefined]) }],
        tokenId,
        unknownId: 1,
        sample: 100,
      }),
    ).toEqual([]);
  });

  it('counts a known word outside a restricted reply head as one the policy cannot emit', () => {
    const lines = vocabularyWarnings({
      sources: [{ name: 'a', taskset: tasks(['red', 'green']) }],
      tokenId,
      unknownId: 1,
      outputTokens: [7],
      sample: 100,
    });
    expect(lines[0]).toMatch(/1 answer word\(s\) .* "green";/);
  });

  it('reads only the first `sample` tasks', () => {
    expect(
      vocabularyWarnings({ sources: [{ name: 'a', taskset: tasks(['red', 'blue']) }], tokenId, unknownId: 1, sample: 1 }),
    ).toEqual([]);
  });
});

describe('ZeroRewardWatch', () => {
  const step = (n: number, max: number) => ({ step: n, 'train/s/r/reward/min': 0, 'train/s/r/reward/max': max });

  it(`warns once, loudly, after ${ZERO_REWARD_STEPS} steps in a row whose every reward is 0`, () => {
    const logged: string[] = [];
    const watch = new ZeroRewardWatch((line) => logged.push(line));
    for (let n = 1; n < ZERO_REWARD_STEPS; n++) watch.onStep(step(n, 0));
    watch.onStep(step(ZERO_REWARD_STEPS, 1)); // a reward: the count starts again
    for (let n = 1; n < ZERO_REWARD_STEPS; n++) watch.onStep(step(ZERO_REWARD_STEPS + n, 0));
    expect(logged).toEqual([]);
    watch.onStep(step(2 * ZERO_REWARD_STEPS, 0));
    watch.onStep(step(2 * ZERO_REWARD_STEPS + 1, 0));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/ZeroRewardWarning: every episode's reward was 0 for 10 steps in a row \(through step 20\)/);
    expect(logged[0]).toMatch(/^\n!{78}\n/);
  });
});

describe('the vocabulary trap in a run', () => {
  it('warns at the start naming the answer no prompt contains, and stops with the zero-reward cause', async () => {
    const logged: string[] = [];
    const config = {
      max_steps: 3,
      groups_per_step: 1,
      train: { source: [{ env: './__fixtures__/sky-env.ts', group_size: 4 }] },
      policy: { d_model: 8, heads: 1, layers: 1 },
      trainer: { worker_thread: false },
    };
    const out = join(mkdtempSync(join(tmpdir(), 'vocabulary-trap-')), 'run');
    const error = await train({ config, out, baseDir: import.meta.dirname, log: (line) => logged.push(line) }).catch(
      (e: Error) => e,
    );
    expect(logged.filter((line) => line.startsWith('VocabularyWarning: source sky: 1 answer word(s)'))).toHaveLength(1);
    expect(logged.find((line) => line.startsWith('VocabularyWarning'))).toContain('"blue"');
    expect((error as Error).name).toBe('TrainingStoppedError');
    expect((error as Error).message).toMatch(
      /every advantage was 0[\s\S]*ZeroRewardWarning: every episode's reward was 0 for the last \d+ episodes/,
    );

    // With the word in [policy] vocabulary the policy can say it: no warning.
    const fixed: string[] = [];
    const withWord = { ...config, max_steps: 1, policy: { ...config.policy, vocabulary: ['blue'] } };
    await train({ config: withWord, out: `${out}-fixed`, baseDir: import.meta.dirname, log: (line) => fixed.push(line) }).catch(
      () => {},
    );
    expect(fixed.filter((line) => line.startsWith('VocabularyWarning'))).toEqual([]);
  });
});
