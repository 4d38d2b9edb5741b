import { ConfigError } from '../errors/troupe-error.ts';
import type { Trace } from '../trace/trace.ts';

// The `--where` language of `troupe export`: a fixed grammar over a trace's filter fields (no `eval`).

/**
 * The fields a `--where` expression can read about a trace. `error` is the first error's type
 * (null when none), `stop` the stop condition, `metrics.<name>` / `rewards.<name>` a metric or
 * a named reward's score (null when absent).
 */
export interface FilterFields {
  reward: number;
  role: string;
  error: string | null;
  stop: string | null;
  ok: boolean;
  turns: number;
  trainable: boolean;
  metrics: Record<string, number | null>;
  rewards: Record<string, number | null>;
}

type Value = number | string | boolean | null;
type Node =
  | { kind: 'literal'; value: Value }
  | { kind: 'field'; path: string[]; at: number }
  | { kind: 'not'; operand: Node }
  | { kind: 'logic'; op: 'and' | 'or'; left: Node; right: Node }
  | { kind: 'compare'; op: '==' | '!=' | '<' | '<=' | '>' | '>='; left: Node; right: Node; at: number };

interface Token {
  type: 'number' | 'string' | 'ident' | 'op' | '(' | ')' | 'end';
  text: string;
  at: number;
}

const FIELDS = new Set(['reward', 'role', 'error', 'stop', 'ok', 'turns', 'trainable']);
const MAPS = new Set(['metrics', 'rewards']);

/** A malformed `--where` expression: the message names the 1-based column and shows it. */
export class FilterSyntaxError extends ConfigError {
  constructor(source: string, at: number, message: string) {
    super(`--where: ${message} at position ${at + 1}\n  ${source}\n  ${' '.repeat(at)}^`);
  }
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (
      /[0-9]/.test(c) ||
      (c === '-' && /[0-9.]/.test(source[i + 1] ?? '')) ||
      (c === '.' && /[0-9]/.test(source[i + 1] ?? ''))
    ) {
      const match = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?/.exec(source.slice(i));
      const text = match?.[0] ?? c;
      tokens.push({ type: 'number', text, at: start });
      i += text.length;
    } else if (c === '"' || c === "'") {
      let text = '';
      i++;
      while (i < source.length && source[i] !== c) {
        if (source[i] === '\\' && i + 1 < source.length) i++;
        text += source[i];
        i++;
      }
      if (i >= source.length) throw new FilterSyntaxError(source, start, 'unterminated string');
      i++;
      tokens.push({ type: 'string', text, at: start });
    } else if (/[A-Za-z_]/.test(c)) {
      const text = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(source.slice(i))?.[0] as string;
      tokens.push({ type: 'ident', text, at: start });
      i += text.length;
    } else if (c === '(' || c === ')') {
      tokens.push({ type: c, text: c, at: start });
      i++;
    } else {
      const op = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!'].find((o) => source.startsWith(o, i));
      if (!op) throw new FilterSyntaxError(source, start, `unexpected character ${JSON.stringify(c)}`);
      tokens.push({ type: 'op', text: op, at: start });
      i += op.length;
    }
  }
  tokens.push({ type: 'end', text: 'end of expression', at: source.length });
  return tokens;
}

/**
 * Parses a filter expression — no `eval`, a fixed grammar:
 * `expr := and ("or" | "||") …`, `and := not ("and" | "&&") …`, `not := ("not" | "!") not | cmp`,
 * `cmp := value [("==" | "!=" | "<" | "<=" | ">" | ">=") value]`, a value is a number, a quoted
 * string, `true` / `false` / `null`, a field (`reward`, `role`, `error`, `stop`, `ok`, `turns`,
 * `trainable`, `metrics.<name>`, `rewards.<name>`) or a parenthesised expression.
 * Throws `FilterSyntaxError` naming the position.
 */
export function parseFilter(source: string): (fields: FilterFields) => boolean {
  // Long: one recursive-descent parser, its rules closures over `tokens` and `index`, kept together.
  const tokens = tokenize(source);
  let index = 0;
  const peek = () => tokens[index] as Token;
  const take = () => tokens[index++] as Token;
  const fail = (token: Token, message: string): never => {
    throw new FilterSyntaxError(
      source,
      token.at,
      `${message}, found ${token.type === 'end' ? 'the end' : JSON.stringify(token.text)}`,
    );
  };
  const isWord = (token: Token, ...words: string[]) =>
    (token.type === 'ident' || token.type === 'op') && words.includes(token.text);

  const parseOr = (): Node => {
    let left = parseAnd();
    while (isWord(peek(), 'or', '||')) {
      take();
      left = { kind: 'logic', op: 'or', left, right: parseAnd() };
    }
    return left;
  };
  const parseAnd = (): Node => {
    let left = parseNot();
    while (isWord(peek(), 'and', '&&')) {
      take();
      left = { kind: 'logic', op: 'and', left, right: parseNot() };
    }
    return left;
  };
  const parseNot = (): Node => {
    if (isWord(peek(), 'not', '!')) {
      take();
      return { kind: 'not', operand: parseNot() };
    }
    return parseCompare();
  };
  const parseCompare = (): Node => {
    const left = parseValue();
    const token = peek();
    if (token.type === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(token.text)) {
      take();
      return { kind: 'compare', op: token.text as '==', left, right: parseValue(), at: token.at };
    }
    return left;
  };
  const parseValue = (): Node => {
    const token = take();
    if (token.type === 'number') {
      const value = Number(token.text);
      if (!Number.isFinite(value)) fail(token, 'expected a number');
      return { kind: 'literal', value };
    }
    if (token.type === 'string') return { kind: 'literal', value: token.text };
    if (token.type === '(') {
      const inner = parseOr();
      if (peek().type !== ')') fail(peek(), 'expected ")"');
      take();
      return inner;
    }
    if (token.type === 'ident') {
      if (token.text === 'true' || token.text === 'false') return { kind: 'literal', value: token.text === 'true' };
      if (token.text === 'null') return { kind: 'literal', value: null };
      const path = token.text.split('.');
      const [head, name, ...extra] = path;
      if (head && FIELDS.has(head) && path.length === 1) return { kind: 'field', path, at: token.at };
      if (head && MAPS.has(head) && name && extra.length === 0) return { kind: 'field', path, at: token.at };
      throw new FilterSyntaxError(
        source,
        token.at,
        `unknown field ${JSON.stringify(token.text)} (fields: ${[...FIELDS].join(', ')}, metrics.<name>, rewards.<name>)`,
      );
    }
    return fail(token, 'expected a value (a number, a string, a field or "(")');
  };

  const tree = parseOr();
  if (peek().type !== 'end') fail(peek(), 'expected "and", "or" or the end');

  const read = (node: Node, fields: FilterFields): Value => {
    switch (node.kind) {
      case 'literal':
        return node.value;
      case 'field': {
        const [head, name] = node.path as [string, string | undefined];
        if (name !== undefined) return (fields[head as 'metrics'] as Record<string, number | null>)[name] ?? null;
        return fields[head as keyof FilterFields] as Value;
      }
      case 'not':
        return !truthy(read(node.operand, fields));
      case 'logic':
        return node.op === 'and'
          ? truthy(read(node.left, fields)) && truthy(read(node.right, fields))
          : truthy(read(node.left, fields)) || truthy(read(node.right, fields));
      case 'compare': {
        const a = read(node.left, fields);
        const b = read(node.right, fields);
        if (node.op === '==') return a === b;
        if (node.op === '!=') return a !== b;
        // Ordering needs two numbers or two strings; a missing (null) metric never passes.
        if (!((typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string'))) return false;
        if (node.op === '<') return a < b;
        if (node.op === '<=') return a <= b;
        if (node.op === '>') return a > b;
        return a >= b;
      }
    }
  };
  return (fields) => truthy(read(tree, fields));
}

function truthy(value: Value): boolean {
  return value !== null && value !== false && value !== 0 && value !== '';
}

/** The filter fields of a trace. */
export function filterFields(trace: Trace): FilterFields {
  const rewards: Record<string, number | null> = {};
  for (const [name, r] of Object.entries(trace.rewards)) rewards[name] = r ? r.score : null;
  return {
    reward: trace.reward,
    role: trace.agent.name,
    error: trace.errors[0]?.type ?? null,
    stop: trace.stopCondition,
    ok: trace.ok,
    turns: trace.numTurns,
    trainable: trace.agent.trainable,
    metrics: { ...trace.metrics },
    rewards,
  };
}
