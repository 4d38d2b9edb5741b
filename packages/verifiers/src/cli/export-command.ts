import { existsSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';
import { readEpisodes } from '../eval/traces-file.ts';
import { contentText, type Message, type ToolDefinition } from '../model/messages.ts';
import type { Episode } from '../trace/episode.ts';
import type { Trace } from '../trace/trace.ts';

// ---- the filter language -------------------------------------------------------------------

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

// ---- records in TRL's shapes ---------------------------------------------------------------

/** A message in the OpenAI / Hugging Face chat-template shape TRL's trainers read. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string;
      reasoning_content?: string;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: unknown } }[];
    }
  | { role: 'tool'; tool_call_id: string; name?: string; content: string };

/** Metadata kept on every exported line. */
export interface ExportMetadata {
  run: string;
  task: string;
  role: string;
  reward: number;
  episode: string;
  trace: string;
  /** Rollout index of the episode within its task's group. */
  rollout: number;
  stop: string | null;
  error: string | null;
  metrics: Record<string, number | null>;
}

/** The export formats. */
export const EXPORT_FORMATS = ['chat', 'sft', 'preference'] as const;
/**
 * One of {@link EXPORT_FORMATS}: `chat` (each trace's conversation), `sft` (the conversations of ok
 * traces, up to their last assistant reply) or `preference` (chosen / rejected pairs of one task's
 * ok traces).
 */
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Trace messages (last branch) in the chat-template shape; tool results carry the tool's name. */
export function toChatMessages(messages: Message[]): ChatMessage[] {
  const toolNames = new Map<string, string>();
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system') out.push({ role: 'system', content: m.content });
    else if (m.role === 'user') out.push({ role: 'user', content: contentText(m.content) });
    else if (m.role === 'assistant') {
      const message: ChatMessage = { role: 'assistant', content: m.content ?? '' };
      if (m.reasoning) message.reasoning_content = m.reasoning;
      if (m.toolCalls?.length) {
        message.tool_calls = m.toolCalls.map((call) => {
          toolNames.set(call.id, call.name);
          return { id: call.id, type: 'function', function: { name: call.name, arguments: parseArguments(call.arguments) } };
        });
      }
      out.push(message);
    } else {
      const name = toolNames.get(m.toolCallId);
      out.push({ role: 'tool', tool_call_id: m.toolCallId, ...(name ? { name } : {}), content: m.content });
    }
  }
  return out;
}

/** Chat templates take tool arguments as an object; text that is not a JSON object stays text. */
function parseArguments(text: string): unknown {
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : text;
  } catch {
    return text;
  }
}

function toolsOf(tools: ToolDefinition[]) {
  return tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
  }));
}

/** Metadata of one trace of an episode. */
export function metadataOf(run: string, episode: { id: string; group: { index: number } }, trace: Trace): ExportMetadata {
  return {
    run,
    task: trace.task.key,
    role: trace.agent.name,
    reward: trace.reward,
    episode: episode.id,
    trace: trace.id,
    rollout: episode.group.index,
    stop: trace.stopCondition,
    error: trace.errors[0]?.type ?? null,
    metrics: { ...trace.metrics },
  };
}

/** Token ids of the last sampled node's sequence, with the completion mask (1 on sampled tokens) and logprobs. */
export function traceTokens(trace: Trace): { input_ids: number[]; completion_mask: number[]; logprobs: number[] } | null {
  const last = trace.nodes.findLast((n) => n.sampled && n.tokenIds);
  if (!last) return null;
  const chain = [];
  for (let node: typeof last | undefined = last; node; ) {
    chain.push(node);
    node = node.tokenParent === null || node.tokenParent === undefined ? undefined : trace.node(node.tokenParent);
  }
  chain.reverse();
  return {
    input_ids: chain.flatMap((n) => n.tokenIds ?? []),
    completion_mask: chain.flatMap((n) => (n.mask ?? []).map((m) => (m ? 1 : 0))),
    logprobs: chain.flatMap((n) => n.logprobs ?? []),
  };
}

/** Messages for SFT: the conversation up to its last assistant message (trailing tool/user turns dropped). */
function sftMessages(trace: Trace): ChatMessage[] {
  const messages = toChatMessages(trace.messages);
  const last = messages.findLastIndex((m) => m.role === 'assistant');
  return messages.slice(0, last + 1);
}

/**
 * One trace as a `chat` or `sft` record: `{messages, tools?, metadata}` (+ `input_ids`,
 * `completion_mask`, `logprobs` with `tokens`). `sft` gives null for a failed trace or one
 * without an assistant reply, and ends the messages on the last reply.
 */
export function toMessagesRecord(
  format: 'chat' | 'sft',
  trace: Trace,
  metadata: ExportMetadata | Record<string, unknown>,
  options: { tokens?: boolean } = {},
): Record<string, unknown> | null {
  if (format === 'sft' && !trace.ok) return null;
  const messages = format === 'sft' ? sftMessages(trace) : toChatMessages(trace.messages);
  if (format === 'sft' && !messages.some((m) => m.role === 'assistant')) return null;
  const record: Record<string, unknown> = { messages };
  if (trace.tools.length) record.tools = toolsOf(trace.tools);
  record.metadata = metadata;
  const tokens = options.tokens ? traceTokens(trace) : null;
  return tokens ? { ...record, ...tokens } : record;
}

/** What `troupe export` does with a run: the format, which traces (role, `--where`) and what each record carries. */
export interface ExportOptions {
  format: ExportFormat;
  /** The run id written into the metadata (default: the run directory's name). */
  run: string;
  /** Only this role (a frozen role is exported only when named here). */
  role?: string;
  /** A `--where` expression. */
  where?: string;
  /** Keep token ids (`input_ids`, `completion_mask`, `logprobs`) when the trace has them. */
  tokens?: boolean;
}

/**
 * Turns episodes into JSONL records in TRL's shapes:
 * - `chat`: `{messages, tools?, metadata}` for every selected trace, failed ones included
 *   (`metadata.error` says why);
 * - `sft`: `{messages, tools?, metadata}` for ok traces that have an assistant reply, ending on it;
 * - `preference`: `{prompt, chosen, rejected, metadata}` for every pair of ok traces of one role in
 *   one group (same task) whose rewards differ, the higher-reward one chosen.
 * Frozen (`trainable = false`) roles are left out unless named with `role`.
 */
export function exportRecords(episodes: Episode[], options: ExportOptions): Record<string, unknown>[] {
  const selected = selectTraces(episodes, options);
  if (options.format === 'chat' || options.format === 'sft') {
    const out: Record<string, unknown>[] = [];
    for (const { episode, trace } of selected) {
      const record = toMessagesRecord(options.format, trace, metadataOf(options.run, episode, trace), options);
      if (record) out.push(record);
    }
    return out;
  }
  const out: Record<string, unknown>[] = [];
  for (const list of preferenceGroups(selected)) {
    list.sort((a, b) => b.trace.reward - a.trace.reward || a.episode.group.index - b.episode.group.index);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const chosen = list[i] as SelectedTrace;
        const rejected = list[j] as SelectedTrace;
        if (chosen.trace.reward > rejected.trace.reward) out.push(preferenceRecord(options.run, chosen, rejected));
      }
    }
  }
  return out;
}

interface SelectedTrace {
  episode: Episode;
  trace: Trace;
}

/** The traces of the role asked for (else of every trainable role) that pass `--where`, in run order. */
function selectTraces(episodes: Episode[], options: ExportOptions): SelectedTrace[] {
  const keep = options.where !== undefined ? parseFilter(options.where) : () => true;
  const selected: SelectedTrace[] = [];
  for (const episode of episodes) {
    for (const trace of episode.traces) {
      if (options.role !== undefined ? trace.agent.name !== options.role : !trace.agent.trainable) continue;
      if (!keep(filterFields(trace))) continue;
      selected.push({ episode, trace });
    }
  }
  return selected;
}

/** The ok traces grouped by group (task) and role: preference pairs are made within a group. */
function preferenceGroups(selected: SelectedTrace[]): SelectedTrace[][] {
  const groups = new Map<string, SelectedTrace[]>();
  for (const item of selected) {
    if (!item.trace.ok) continue;
    const key = JSON.stringify([item.episode.group.id, item.trace.agent.name]);
    const list = groups.get(key) ?? [];
    list.push(item);
    groups.set(key, list);
  }
  return [...groups.values()];
}

/** `{prompt, chosen, rejected, metadata}`: the prompt is the two conversations' common prefix. */
function preferenceRecord(run: string, chosen: SelectedTrace, rejected: SelectedTrace): Record<string, unknown> {
  const a = toChatMessages(chosen.trace.messages);
  const b = toChatMessages(rejected.trace.messages);
  // The prompt is the common prefix of the two conversations (at least the task's prompt).
  let shared = 0;
  while (shared < a.length && shared < b.length && JSON.stringify(a[shared]) === JSON.stringify(b[shared])) shared++;
  const firstAssistant = Math.min(
    ...[a, b].map((m) => {
      const k = m.findIndex((x) => x.role === 'assistant');
      return k < 0 ? m.length : k;
    }),
  );
  shared = Math.min(shared, firstAssistant);
  return {
    prompt: a.slice(0, shared),
    chosen: a.slice(shared),
    rejected: b.slice(shared),
    metadata: {
      ...metadataOf(run, chosen.episode, chosen.trace),
      chosen: { trace: chosen.trace.id, episode: chosen.episode.id, reward: chosen.trace.reward },
      rejected: { trace: rejected.trace.id, episode: rejected.episode.id, reward: rejected.trace.reward },
    },
  };
}

// ---- the command ---------------------------------------------------------------------------

/** `troupe export --help`. */
export const EXPORT_HELP = `troupe export <run-dir> --format chat|sft|preference [options]

Writes a run's traces as JSONL in the shapes Hugging Face TRL's trainers read, one object a line:
  chat        {"messages": [...], "tools": [...], "metadata": {...}}   every selected trace
  sft         {"messages": [...], "tools": [...], "metadata": {...}}   ok traces, ending on the last reply
  preference  {"prompt": [...], "chosen": [...], "rejected": [...], "metadata": {...}}
              pairs of ok traces of one role within a group (task) whose rewards differ
Messages carry tool calls (tool_calls) and tool results (role "tool"). metadata: run, task, role,
reward, episode, trace, rollout, stop, error, metrics.

Options:
      --format FORMAT    chat, sft or preference (required)
      --role ROLE        only this role; frozen roles (trainable = false) are left out unless named here
      --where EXPR       keep traces where EXPR holds, e.g. "reward >= 1 and error == null"
                         fields: reward, role, error (first error type or null), stop, ok, turns,
                         trainable, metrics.<name>, rewards.<name>; operators: == != < <= > >=
                         and or not ( ); values: numbers, 'strings', true, false, null
      --tokens           keep token ids: input_ids, completion_mask (1 = sampled), logprobs
  -o, --out FILE         write here (default: standard output)
  -h, --help
`;

/** `troupe export`: returns the exit code. */
export async function exportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      format: { type: 'string' },
      role: { type: 'string' },
      where: { type: 'string' },
      tokens: { type: 'boolean' },
      out: { type: 'string', short: 'o' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(EXPORT_HELP);
    return 0;
  }
  const runDir = positionals[0];
  if (!runDir) throw new ConfigError('troupe export <run-dir>: name a run directory');
  if (positionals.length > 1) throw new ConfigError(`troupe export: one run directory, got ${positionals.length}`);
  if (!values.format) throw new ConfigError(`--format is required (${EXPORT_FORMATS.join(', ')})`);
  if (!(EXPORT_FORMATS as readonly string[]).includes(values.format)) {
    throw new ConfigError(`--format must be one of ${EXPORT_FORMATS.join(', ')}, got ${JSON.stringify(values.format)}`);
  }
  // Parse the filter before reading anything, so a malformed one fails fast.
  if (values.where !== undefined) parseFilter(values.where);
  const tracesPath = join(runDir, 'traces.jsonl');
  if (!existsSync(tracesPath)) throw new ConfigError(`${runDir} has no traces.jsonl (is it a run directory?)`);
  const { episodes, badLines } = readEpisodes(tracesPath);
  for (const bad of badLines) process.stderr.write(`warning: skipping line ${bad.line} of traces.jsonl (${bad.reason})\n`);
  const roles = [...new Set(episodes.flatMap((e) => e.traces.map((t) => t.agent.name)))];
  if (values.role !== undefined && !roles.includes(values.role)) {
    throw new ConfigError(`--role ${values.role}: no trace of the run has this role (roles: ${roles.join(', ') || 'none'})`);
  }
  const records = exportRecords(episodes, {
    format: values.format as ExportFormat,
    run: basename(resolve(runDir)),
    ...(values.role !== undefined ? { role: values.role } : {}),
    ...(values.where !== undefined ? { where: values.where } : {}),
    ...(values.tokens ? { tokens: true } : {}),
  });
  if (records.length === 0) {
    const frozen = [...new Set(episodes.flatMap((e) => e.traces.filter((t) => !t.agent.trainable).map((t) => t.agent.name)))];
    process.stderr.write(
      `warning: no ${values.format} records from ${episodes.length} episodes${frozen.length && values.role === undefined ? ` (frozen roles ${frozen.join(', ')} are left out unless named with --role)` : ''}\n`,
    );
  }
  const text = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  if (values.out) {
    writeFileSync(values.out, text);
    process.stderr.write(`wrote ${records.length} ${values.format} records to ${values.out}\n`);
  } else {
    process.stdout.write(text);
  }
  return 0;
}
