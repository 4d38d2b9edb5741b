import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { doubleLoneBackslashes, parseProposal } from './proposal-parser.ts';

function parseError(text: string): Error {
  try {
    parseProposal(text);
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a ParseError');
}

describe('parseProposal', () => {
  it('takes the last JSON line of the reply', () => {
    const reply = [
      'I chose the numbers with code:',
      '{"problem": "an earlier draft", "answer": 1}',
      '```python\nprint(7 * 6)\n```',
      '{"problem": "A tank holds 6 rows of 7 fish. How many fish?", "answer": 42}',
    ].join('\n');
    expect(parseProposal(reply)).toEqual({ problem: 'A tank holds 6 rows of 7 fish. How many fish?', answer: 42 });
  });

  it('falls back to the greedy {…} span when the JSON spans several lines', () => {
    const reply = 'Here it is:\n{\n  "problem": "How many subsets does a 5-set have?",\n  "answer": 32\n}\nGood luck!';
    expect(parseProposal(reply)).toEqual({ problem: 'How many subsets does a 5-set have?', answer: 32 });
  });

  it('retries once with lone backslashes doubled (LaTeX)', () => {
    const reply = String.raw`{"problem": "Find \lfloor \sqrt{2026} \rfloor.", "answer": 45}`;
    expect(parseProposal(reply)).toEqual({ problem: String.raw`Find \lfloor \sqrt{2026} \rfloor.`, answer: 45 });
  });

  it('accepts a negative integer answer and a fenced JSON line', () => {
    expect(parseProposal('```json\n{"problem": "p", "answer": -7}\n```')).toEqual({ problem: 'p', answer: -7 });
  });

  it.each([
    ['a bool answer', '{"problem": "Is 7 prime?", "answer": true}', /bool/],
    ['a float answer', '{"problem": "p", "answer": 2.5}', /integer/],
    ['a string answer', '{"problem": "p", "answer": "42"}', /integer/],
    ['an empty problem', '{"problem": "  ", "answer": 4}', /non-empty/],
    ['no JSON at all', 'The answer is 42.', /no JSON line/],
    ['JSON without an answer', '{"problem": "p"}', /no JSON line/],
    ['an unsafe integer', '{"problem": "p", "answer": 123456789012345678901234567890}', /integer/],
  ])('refuses %s with a ParseError', (_, text, message) => {
    const error = parseError(text);
    expect(error.name).toBe('ParseError');
    expect(error.message).toMatch(message);
  });

  it('throws nothing but a ParseError on random text', () => {
    const pieces = fc.constantFrom(
      '{',
      '}',
      '"problem"',
      '"answer"',
      ':',
      ',',
      '\\',
      '\n',
      'true',
      '1',
      '-',
      '.',
      '"',
      'null',
      '[',
      ']',
      '\\u12',
      ' ',
    );
    const text = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 200 }),
      fc.array(pieces, { maxLength: 60 }).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(text, (input) => {
        try {
          const proposal = parseProposal(input);
          expect(Number.isSafeInteger(proposal.answer)).toBe(true);
          expect(proposal.problem.length).toBeGreaterThan(0);
        } catch (error) {
          expect((error as Error).name).toBe('ParseError');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips any problem text and integer answer written as one JSON line', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((s) => s.trim().length > 0),
        fc.maxSafeInteger(),
        (problem, answer) => {
          const reply = `Some working.\n${JSON.stringify({ problem, answer })}`;
          expect(parseProposal(reply)).toEqual({ problem: problem.trim(), answer });
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('doubleLoneBackslashes', () => {
  it('doubles only backslashes that do not start a valid JSON escape', () => {
    expect(doubleLoneBackslashes(String.raw`\sqrt \\ \" \frac \u00e9 \u12`)).toBe(String.raw`\\sqrt \\ \" \\frac \u00e9 \\u12`);
  });
});
