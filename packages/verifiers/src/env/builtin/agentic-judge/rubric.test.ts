import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RUBRIC, judgeScore, loadRubricFile, parseVerdicts, type Rubric, RubricSchema } from './rubric.ts';

const rubric: Rubric = RubricSchema.parse({
  criteria: [
    { name: 'correct', text: 'Is the output correct?', weight: 3, choices: ['no', 'partly', 'yes'] },
    { name: 'tidy', text: 'Is the code tidy?', choices: ['no', 'yes'] },
  ],
});

const verdict = (entries: unknown[]) => JSON.stringify({ verdicts: entries });

describe('parseVerdicts', () => {
  it('scores each choice as index / (choices - 1) and returns the verdicts in rubric order', () => {
    const verdicts = parseVerdicts({
      rubric,
      text: verdict([
        { name: 'tidy', reason: 'ran the linter, clean', verdict: 'yes' },
        { name: 'correct', reason: 'two of four tests pass', verdict: 'partly' },
      ]),
    });
    expect(verdicts.map((v) => [v.name, v.score])).toEqual([
      ['correct', 0.5],
      ['tidy', 1],
    ]);
    expect(judgeScore(verdicts)).toBeCloseTo((3 * 0.5 + 1) / 4);
  });

  it.each([
    ['not JSON', 'the solver did fine', /not JSON/],
    ['a wrong shape', JSON.stringify({ verdict: 'yes' }), /verdicts/],
    ['a missing criterion', verdict([{ name: 'correct', reason: 'r', verdict: 'yes' }]), /no verdict for criterion "tidy"/],
    [
      'a duplicate criterion',
      verdict([
        { name: 'correct', reason: 'r', verdict: 'yes' },
        { name: 'correct', reason: 'r', verdict: 'no' },
        { name: 'tidy', reason: 'r', verdict: 'no' },
      ]),
      /duplicate verdict for criterion "correct"/,
    ],
    [
      'an unknown criterion',
      verdict([
        { name: 'correct', reason: 'r', verdict: 'yes' },
        { name: 'tidy', reason: 'r', verdict: 'no' },
        { name: 'style', reason: 'r', verdict: 'no' },
      ]),
      /unknown criterion "style"/,
    ],
    [
      'an answer outside the choices',
      verdict([
        { name: 'correct', reason: 'r', verdict: 'mostly' },
        { name: 'tidy', reason: 'r', verdict: 'no' },
      ]),
      /"mostly" for correct is not one of "no", "partly", "yes"/,
    ],
    [
      'a missing reason',
      verdict([
        { name: 'correct', reason: ' ', verdict: 'yes' },
        { name: 'tidy', reason: 'r', verdict: 'no' },
      ]),
      /reason/,
    ],
    [
      'an extra field',
      verdict([
        { name: 'correct', reason: 'r', verdict: 'yes', score: 1 },
        { name: 'tidy', reason: 'r', verdict: 'no' },
      ]),
      /score/,
    ],
  ])('refuses %s with a ParseError (never a 0)', (_, text, message) => {
    let thrown: unknown;
    try {
      parseVerdicts({ rubric, text });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).name).toBe('ParseError');
    expect((thrown as Error).message).toMatch(message);
  });

  it('defaults to one criterion, solved, answered no or yes', () => {
    expect(DEFAULT_RUBRIC.criteria).toEqual([
      { name: 'solved', text: 'Did the solver solve the task?', weight: 1, choices: ['no', 'yes'] },
    ]);
    const [only] = parseVerdicts({
      rubric: DEFAULT_RUBRIC,
      text: verdict([{ name: 'solved', reason: 'tests pass', verdict: 'yes' }]),
    });
    expect(only?.score).toBe(1);
  });
});

describe('RubricSchema', () => {
  it('refuses fewer than two choices, repeated choices, repeated names and all-zero weights', () => {
    expect(RubricSchema.safeParse({ criteria: [{ name: 'a', text: 't', choices: ['yes'] }] }).success).toBe(false);
    expect(RubricSchema.safeParse({ criteria: [{ name: 'a', text: 't', choices: ['no', 'no'] }] }).success).toBe(false);
    expect(
      RubricSchema.safeParse({
        criteria: [
          { name: 'a', text: 't', choices: ['no', 'yes'] },
          { name: 'a', text: 'u', choices: ['no', 'yes'] },
        ],
      }).success,
    ).toBe(false);
    expect(RubricSchema.safeParse({ criteria: [{ name: 'a', text: 't', weight: 0, choices: ['no', 'yes'] }] }).success).toBe(
      false,
    );
  });

  it('loads a rubric file and names the file and field when it is wrong', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rubric-'));
    const good = join(dir, 'rubric.toml');
    writeFileSync(good, '[[criteria]]\nname = "works"\ntext = "Does it work?"\nchoices = ["no", "yes"]\n');
    expect(loadRubricFile(good).criteria[0]).toMatchObject({ name: 'works', weight: 1 });
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ criteria: [{ name: 'works', text: 't', choices: ['only'] }] }));
    expect(() => loadRubricFile(bad)).toThrow(/bad\.json.*criteria\.0\.choices/);
  });
});
