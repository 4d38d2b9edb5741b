import { ParseError } from '../../../errors/troupe-error.ts';

/** A proposed problem with its integer answer. */
export interface Proposal {
  problem: string;
  answer: number;
}

/** Escapes kept on the retry: LaTeX commands such as `\frac`, `\neq`, `\rfloor` start with b/f/n/r/t too. */
const KEPT_ESCAPE = new Set(['"', '\\', '/']);

/**
 * Doubles every lone backslash (LaTeX such as `\sqrt`, `\frac`, `\(`), leaving the pairs `\\`,
 * escaped quotes `\"`, `\/` and `\u00e9`-style escapes as they are. Used only on the retry, when
 * the reply did not parse as JSON: there a `\f` or `\n` is far more likely LaTeX than a control
 * character.
 */
export function doubleLoneBackslashes(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char !== '\\') {
      out += char;
      continue;
    }
    const next = text[i + 1];
    if (next !== undefined && KEPT_ESCAPE.has(next)) {
      out += char + next;
      i++;
    } else if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
      out += text.slice(i, i + 6);
      i += 5;
    } else {
      out += '\\\\';
    }
  }
  return out;
}

function parseObject(candidate: string): Record<string, unknown> | undefined {
  for (const text of [candidate, doubleLoneBackslashes(candidate)]) {
    try {
      const value: unknown = JSON.parse(text);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
      return undefined;
    } catch {
      // One retry with lone backslashes doubled, then give up on this candidate.
    }
  }
  return undefined;
}

/**
 * The candidates, most likely first: every line that looks like a JSON object, scanning from the
 * end, then the greedy `{…}` span of the whole reply (first `{` to last `}`).
 */
function candidates(text: string): string[] {
  const out: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = (lines[i] ?? '')
      .trim()
      .replace(/^`+|`+$/g, '')
      .trim();
    if (line.startsWith('{') && line.endsWith('}')) out.push(line);
  }
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) out.push(text.slice(start, end + 1));
  return out;
}

/**
 * Parses the proposer's reply: the last JSON line (scanning from the end), else the greedy
 * `{…}` span, each retried once with lone backslashes doubled. The first object that has both
 * `problem` and `answer` is the proposal: `problem` must be a non-empty string and `answer` an
 * integer (not a bool, a float or a numeric string). Anything else is a `ParseError`; this
 * function throws nothing else, whatever the input.
 */
export function parseProposal(text: string): Proposal {
  if (typeof text !== 'string') throw new ParseError('the proposer reply is not text');
  for (const candidate of candidates(text)) {
    const value = parseObject(candidate);
    if (!value || !('problem' in value) || !('answer' in value)) continue;
    const { problem, answer } = value;
    if (typeof problem !== 'string' || !problem.trim())
      throw new ParseError('the proposal\'s "problem" must be a non-empty string');
    if (typeof answer === 'boolean') throw new ParseError(`the proposal's "answer" is a bool (${answer}), not an integer`);
    if (typeof answer !== 'number' || !Number.isSafeInteger(answer)) {
      throw new ParseError(`the proposal's "answer" must be an integer, got ${JSON.stringify(answer)}`);
    }
    return { problem: problem.trim(), answer };
  }
  throw new ParseError('the proposer reply has no JSON line {"problem": ..., "answer": <integer>}');
}
