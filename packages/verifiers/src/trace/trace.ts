import { ConfigError, errorRecord, RewardError } from '../errors/troupe-error.ts';
import { type AssistantMessage, contentText, type Message, type ToolDefinition } from '../model/messages.ts';
import { addUsage, emptyUsage, type ModelRequest, type ModelResponse, type Usage } from '../model/model-client.ts';
import { canonicalJson, sha256 } from '../util/hash.ts';
import { randomUuid } from '../util/uuid.ts';
import {
  type MessageNode,
  type ModelCall,
  type Reward,
  type StopCondition,
  TRACE_VERSION,
  type TraceError,
  type TraceRecord,
  TraceRecordSchema,
} from './trace-schema.ts';

/** What `new Trace(init)` takes: an id (default: a fresh UUID), the task stamp and the agent (role) that runs it. */
export interface TraceInit {
  id?: string;
  task: TraceRecord['task'];
  agent: TraceRecord['agent'];
}

/** Metadata of one recorded model call, besides the request and response. */
export interface CallMeta {
  dialect: string;
  startedAt: number;
  durationMs: number;
}

/**
 * Everything that happened in one agent run: the message graph with token ids, every model
 * call, rewards, metrics, errors and the stop condition. Failures are data: `ok=false` with
 * an error, never a silent 0.
 */
export class Trace {
  readonly id: string;
  readonly task: TraceRecord['task'];
  agent: TraceRecord['agent'];
  tools: ToolDefinition[] = [];
  readonly nodes: MessageNode[] = [];
  readonly calls: ModelCall[] = [];
  rewards: Record<string, Reward | null> = {};
  metrics: Record<string, number | null> = {};
  info: Record<string, unknown> = {};
  extraUsage: Usage[] = [];
  isCompleted = false;
  ok = true;
  stopCondition: StopCondition | null = null;
  errors: TraceError[] = [];
  timing: TraceRecord['timing'] = {};
  startedAt = Date.now();
  endedAt: number | null = null;
  /** Free state for harnesses and tasks; never serialized. */
  state: Record<string, unknown> = {};

  /**
   * The child index (content key, see `messageKey` -> node id), per parent: slot 0 for the
   * root, `id + 1` for node `id`. Most nodes have one child, kept inline — its key at `2·slot`
   * and its id at `2·slot + 1` of one array (one backing store per trace, not two); more go to a Map.
   */
  private readonly firstChild: (string | number | undefined)[] = [];
  /**
   * The program's own conversation: the last prompt node and the reply node of its latest call.
   * Undefined until a call succeeds; the first successful call starts it (see `recordCall`).
   */
  private conversation: { prompt: number | null; reply: number } | undefined;
  private moreChildren: (Map<string, number> | undefined)[] | undefined;

  constructor(init: TraceInit) {
    this.id = init.id ?? randomUuid();
    this.task = init.task;
    this.agent = init.agent;
  }

  // ---- derived values -------------------------------------------------------------------

  /** Σ score·weight over the non-null rewards. */
  get reward(): number {
    let total = 0;
    for (const r of Object.values(this.rewards)) if (r) total += r.score * r.weight;
    return total;
  }

  /** Number of sampled nodes (model turns). */
  get numTurns(): number {
    let n = 0;
    for (const node of this.nodes) if (node.sampled) n++;
    return n;
  }

  /**
   * Text of the final reply, trimmed ('' when there is none): the reply of the last call of the
   * program's own conversation — never a side call's (see `recordCall`); without calls, the
   * last sampled assistant message.
   */
  get lastReply(): string {
    if (this.conversation) {
      const reply = this.node(this.conversation.reply).message;
      return reply.role === 'assistant' ? contentText(reply.content).trim() : '';
    }
    for (let i = this.nodes.length - 1; i >= 0; i--) {
      const node = this.nodes[i];
      if (node?.sampled && node.message.role === 'assistant') return contentText(node.message.content).trim();
    }
    return '';
  }

  /** Node ids of each branch, root to leaf (leaves = nodes with no children). */
  get branches(): number[][] {
    const hasChild = new Set<number>();
    for (const node of this.nodes) if (node.parent !== null) hasChild.add(node.parent);
    return this.nodes.filter((n) => !hasChild.has(n.id)).map((leaf) => this.path(leaf.id));
  }

  /**
   * Messages of the last branch (the one holding the most recent node), when it continues the
   * program's own conversation; else (a side call, or a failed call's prompt, was recorded last)
   * the conversation's branch, up to its final reply.
   */
  get messages(): Message[] {
    const last = this.nodes[this.nodes.length - 1];
    if (!last) return [];
    const conversation = this.conversation;
    const leaf = conversation && !this.passesThrough(last.id, conversation.reply) ? conversation.reply : last.id;
    return this.path(leaf).map((id) => this.node(id).message);
  }

  /**
   * Whether a call whose prompt ends at `promptNode` continues the program's own conversation: its
   * prompt passes through the previous call's prompt, or it sends the previous call's reply back
   * (a program that re-renders its history: trailing context moved, tool call ids rewritten).
   */
  private continuesConversation(promptNode: number | null, conversation: { prompt: number | null; reply: number }): boolean {
    if (this.passesThrough(promptNode, conversation.prompt)) return true;
    const reply = this.node(conversation.reply).message;
    for (let current = promptNode; current !== null; current = this.node(current).parent) {
      if (sameReply(this.node(current).message, reply)) return true;
    }
    return false;
  }

  /** Whether the path from the root to node `from` passes through node `target` (null: the root, always). */
  private passesThrough(from: number | null, target: number | null): boolean {
    if (target === null) return true;
    for (let current = from; current !== null; current = this.node(current).parent) {
      if (current === target) return true;
      if (current < target) return false;
    }
    return false;
  }

  /** Usage summed over calls and extra usage (judge calls). */
  get usage(): Usage {
    let total = emptyUsage();
    for (const call of this.calls) if (call.usage) total = addUsage(total, call.usage);
    for (const u of this.extraUsage) total = addUsage(total, u);
    return total;
  }

  /** True when the last call stopped on the token limit. */
  get isTruncated(): boolean {
    return this.calls.at(-1)?.finishReason === 'length';
  }

  /** Node ids from the root to `id`. */
  path(id: number): number[] {
    const out: number[] = [];
    let current: number | null = id;
    while (current !== null) {
      out.push(current);
      current = this.node(current).parent;
    }
    return out.reverse();
  }

  node(id: number): MessageNode {
    const node = this.nodes[id];
    if (!node) throw new ConfigError(`trace ${this.id} has no node ${id}`, { path: 'id' });
    return node;
  }

  // ---- mutators --------------------------------------------------------------------------

  /** Records (or overwrites) a named reward. */
  recordReward(name: string, score: number, weight = 1): void {
    if (!Number.isFinite(score)) throw new RewardError(`reward ${name}: score must be a finite number, got ${score}`);
    this.rewards[name] = { score, weight };
  }

  recordMetric(name: string, value: number | null): void {
    this.metrics[name] = value;
  }

  /** Sets the stop condition; the first one wins. */
  stop(condition: StopCondition): void {
    if (this.stopCondition === null) this.stopCondition = condition;
  }

  /** Records an error: `ok=false` and the trace stops with `error`. */
  recordError(error: unknown, stage?: string): void {
    const record: TraceError = errorRecord(error);
    if (stage) record.stage = stage;
    this.errors.push(record);
    this.ok = false;
    this.stop('error');
  }

  /** Adds a message to the graph under `parent` (de-duplicated by content), returning its id. */
  addMessage(message: Message, parent: number | null, sampled = false): number {
    const slot = parent === null ? 0 : parent + 1;
    const key = messageKey(message);
    if (!sampled) {
      const existing = this.childOf(slot, key);
      if (existing !== undefined) return existing;
    }
    const id = this.nodes.length;
    this.nodes.push({ id, parent, message, sampled, timestamp: Date.now() });
    this.indexChild(slot, key, id, sampled);
    return id;
  }

  private childOf(slot: number, key: string): number | undefined {
    if (this.firstChild[2 * slot] === key) return this.firstChild[2 * slot + 1] as number;
    return this.moreChildren?.[slot]?.get(key);
  }

  /** Indexes child `id` under `key`; an existing entry is replaced only when `replace` (a sampled node). */
  private indexChild(slot: number, key: string, id: number, replace: boolean): void {
    const first = this.firstChild[2 * slot];
    if (first === undefined) {
      this.firstChild[2 * slot] = key;
      this.firstChild[2 * slot + 1] = id;
    } else if (first === key) {
      if (replace) this.firstChild[2 * slot + 1] = id;
    } else {
      this.moreChildren ??= [];
      let more = this.moreChildren[slot];
      if (!more) {
        more = new Map();
        this.moreChildren[slot] = more;
      }
      if (replace || !more.has(key)) more.set(key, id);
    }
  }

  /** Adds a chain of prompt messages from the root, returning the id of the last one. */
  addPrompt(messages: Message[]): number | null {
    let parent: number | null = null;
    for (const message of messages) parent = this.addMessage(message, parent);
    return parent;
  }

  /**
   * Records one successful model call: the prompt into the graph, the reply as a sampled node
   * with its token ids and logprobs, and a ModelCall.
   */
  recordCall(request: ModelRequest, response: ModelResponse, meta: CallMeta): MessageNode {
    const promptNode = this.addPrompt(request.messages);
    const node = response.completionTokenIds
      ? this.addSampledTokens(response, promptNode)
      : this.node(this.addMessage(response.message, promptNode, true));
    const nodeId = node.id;
    if (request.tools?.length && this.tools.length === 0) this.tools = request.tools;
    const call: ModelCall = {
      node: nodeId,
      promptNode,
      model: response.model || request.model,
      dialect: meta.dialect,
      sampling: { ...request.sampling },
      finishReason: response.finishReason,
      usage: response.usage,
      startedAt: meta.startedAt,
      durationMs: meta.durationMs,
      numTools: request.tools?.length ?? 0,
    };
    // Set after the literal (still the last key): no spread of a temporary object per call.
    if (response.policyVersion !== undefined) call.policyVersion = response.policyVersion;
    // The program's own conversation is the chain of calls whose prompt passes through the
    // previous one's (a next turn, or the same turn asked again); any other call is a side call.
    if (this.conversation === undefined || this.continuesConversation(promptNode, this.conversation)) {
      this.conversation = { prompt: promptNode, reply: nodeId };
    } else {
      call.side = true;
    }
    this.calls.push(call);
    return node;
  }

  /**
   * Records a call the rollout's end stopped: `cut_off` (in flight when its program exited) or
   * `refused` (arrived after). Nothing enters the message graph: such a call can never be part of
   * a conversation or a reply.
   */
  recordEndedCall(options: {
    ended: 'cut_off' | 'refused';
    model: string;
    dialect: string;
    startedAt: number;
    error: unknown;
  }): void {
    this.calls.push({
      model: options.model,
      dialect: options.dialect,
      sampling: {},
      startedAt: options.startedAt,
      durationMs: Date.now() - options.startedAt,
      error: errorRecord(options.error),
      ended: options.ended,
    });
  }

  /** Records a failed model call (the prompt still lands in the graph). */
  recordFailedCall(request: ModelRequest, error: unknown, meta: CallMeta): void {
    const promptNode = this.addPrompt(request.messages);
    this.calls.push({
      promptNode,
      model: request.model,
      dialect: meta.dialect,
      sampling: { ...request.sampling },
      startedAt: meta.startedAt,
      durationMs: meta.durationMs,
      error: errorRecord(error),
      numTools: request.tools?.length ?? 0,
    });
  }

  /** Full token sequence (prompt + completion) ending at sampled node `id`. */
  tokenSequence(id: number): number[] {
    const chain: MessageNode[] = [];
    let current: MessageNode | undefined = this.node(id);
    while (current) {
      chain.push(current);
      const parent: number | null | undefined = current.tokenParent;
      current = parent === null || parent === undefined ? undefined : this.node(parent);
    }
    return chain.reverse().flatMap((n) => n.tokenIds ?? []);
  }

  /**
   * Adds the sampled reply of `response` under `parent` with its token ids, mask and logprobs:
   * the tokens after its token parent (the nearest sampled ancestor whose sequence the prompt
   * extends) and the completion. Made as one object with every field (not grown field by field).
   */
  private addSampledTokens(response: ModelResponse, parent: number | null): MessageNode {
    const message = response.message;
    const key = messageKey(message);
    const completion = response.completionTokenIds ?? [];
    const prompt = response.promptTokenIds ?? [];
    // The nearest sampled ancestor with tokens is the candidate token parent.
    let ancestor: number | null = parent;
    while (ancestor !== null && !(this.node(ancestor).sampled && this.node(ancestor).tokenIds)) {
      ancestor = this.node(ancestor).parent;
    }
    let from = 0;
    let tokenParent: number | null = null;
    if (ancestor !== null) {
      const before = this.prefixLength(ancestor, prompt);
      if (before >= 0) {
        from = before;
        tokenParent = ancestor;
      }
    }
    const tokenIds = from === 0 ? prompt.concat(completion) : tail(prompt, from, completion);
    const scaffold = prompt.length - from;
    const mask = new Array<boolean>(tokenIds.length);
    for (let i = 0; i < tokenIds.length; i++) mask[i] = i >= scaffold;
    const logprobs = response.completionLogprobs
      ? [...response.completionLogprobs]
      : new Array<number>(completion.length).fill(0);
    const id = this.nodes.length;
    const node: MessageNode = {
      id,
      parent,
      message,
      sampled: true,
      timestamp: Date.now(),
      tokenIds,
      mask,
      logprobs,
      tokenParent,
    };
    this.nodes.push(node);
    this.indexChild(parent === null ? 0 : parent + 1, key, id, true);
    return node;
  }

  /** The length of `tokenSequence(id)` when it is a prefix of `tokens`, else -1 (without building the sequence). */
  private prefixLength(id: number, tokens: readonly number[]): number {
    const chain: number[][] = [];
    let length = 0;
    let current: MessageNode | undefined = this.node(id);
    while (current) {
      const ids = current.tokenIds ?? [];
      chain.push(ids);
      length += ids.length;
      const parent: number | null | undefined = current.tokenParent;
      current = parent === null || parent === undefined ? undefined : this.node(parent);
    }
    if (length > tokens.length) return -1;
    let offset = 0;
    for (let c = chain.length - 1; c >= 0; c--) {
      for (const token of chain[c] as number[]) if (tokens[offset++] !== token) return -1;
    }
    return length;
  }

  // ---- serialization -----------------------------------------------------------------------

  toJSON(): TraceRecord {
    return {
      version: TRACE_VERSION,
      id: this.id,
      task: this.task,
      agent: this.agent,
      tools: this.tools,
      nodes: this.nodes,
      calls: this.calls,
      rewards: this.rewards,
      metrics: this.metrics,
      info: this.info,
      extraUsage: this.extraUsage,
      isCompleted: this.isCompleted,
      ok: this.ok,
      stopCondition: this.stopCondition,
      errors: this.errors,
      timing: this.timing,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
    };
  }

  /** Parses and validates a serialized trace (throws a ZodError naming the bad field). */
  static fromJSON(value: unknown): Trace {
    const record = TraceRecordSchema.parse(value);
    const trace = new Trace({ id: record.id, task: record.task, agent: record.agent });
    trace.tools = record.tools;
    for (const node of record.nodes) {
      trace.nodes.push(node);
      trace.indexChild(node.parent === null ? 0 : node.parent + 1, messageKey(node.message), node.id, node.sampled);
    }
    trace.calls.push(...record.calls);
    for (let i = record.calls.length - 1; i >= 0; i--) {
      const call = record.calls[i];
      if (call?.node === undefined || call.side) continue;
      trace.conversation = { prompt: call.promptNode ?? null, reply: call.node };
      break;
    }
    trace.rewards = record.rewards;
    trace.metrics = record.metrics;
    trace.info = record.info;
    trace.extraUsage = record.extraUsage;
    trace.isCompleted = record.isCompleted;
    trace.ok = record.ok;
    trace.stopCondition = record.stopCondition;
    trace.errors = record.errors;
    trace.timing = record.timing;
    trace.startedAt = record.startedAt;
    trace.endedAt = record.endedAt;
    return trace;
  }
}

/** `prompt` from index `from`, then `completion`, in one array of their exact length. */
function tail(prompt: readonly number[], from: number, completion: readonly number[]): number[] {
  const out = new Array<number>(prompt.length - from + completion.length);
  let at = 0;
  for (let i = from; i < prompt.length; i++) out[at++] = prompt[i] as number;
  for (let i = 0; i < completion.length; i++) out[at++] = completion[i] as number;
  return out;
}

/**
 * Content hash used to match a message re-sent by a program against the graph. Whitespace
 * around text and the formatting of tool-call JSON arguments do not matter.
 */
export function messageHash(message: Message): string {
  return sha256(canonicalMessage(message));
}

/**
 * The key of the graph's child index: two messages get the same key exactly when they have the
 * same `messageHash`. Short messages are keyed by their canonical JSON itself (no digest to
 * compute); longer ones by the hash, so the index never holds a second copy of a long text.
 * Programs re-send the whole conversation on every call, as new message objects parsed from each
 * request: the key of a plain text (system, user, assistant without tool calls) is remembered by
 * role and text, and that of a tool message per message object.
 */
function messageKey(message: Message): string {
  const content = message.content;
  if (typeof content !== 'string') return keyOf(canonicalMessage(message));
  if (message.role === 'tool') {
    const cached = keyCache.get(message);
    if (cached !== undefined && cached.content === content && cached.toolCallId === message.toolCallId) return cached.key;
    const key = keyOf(canonicalMessage(message));
    keyCache.set(message, { content, toolCallId: message.toolCallId, key });
    return key;
  }
  if (message.role !== 'assistant' || !message.toolCalls?.length) return textKey(message.role, content);
  return keyOf(canonicalMessage(message));
}

/** Canonical JSON starts with `{`, a hex digest never does: the two kinds of key cannot collide. */
function keyOf(canonical: string): string {
  return canonical.length <= MAX_INLINE_KEY ? canonical : sha256(canonical);
}

const MAX_INLINE_KEY = 256;

/**
 * Keys of plain texts (system, user, assistant without tool calls), per role, by text: a game, a
 * user simulator or a program sends the same texts (a long system prompt) as new message objects
 * every turn, and the key of such a message depends on its role and text alone. A hit costs a
 * string hash and comparison instead of the canonical JSON and its SHA-256. Cleared when it holds
 * {@link TEXT_KEYS} entries or {@link TEXT_KEY_CHARS} characters of text.
 */
const textKeys = new Map<string, Map<string, string>>();
let textKeyCount = 0;
let textKeyChars = 0;
const TEXT_KEYS = 4096;
const TEXT_KEY_CHARS = 1 << 22;

function textKey(role: 'system' | 'user' | 'assistant', content: string): string {
  let keys = textKeys.get(role);
  const cached = keys?.get(content);
  if (cached !== undefined) return cached;
  const key = keyOf(canonicalMessage({ role, content } as Message));
  if (content.length > TEXT_KEY_CHARS) return key;
  if (textKeyCount >= TEXT_KEYS || textKeyChars + content.length > TEXT_KEY_CHARS) {
    textKeys.clear();
    textKeyCount = 0;
    textKeyChars = 0;
    keys = undefined;
  }
  if (keys === undefined) {
    keys = new Map();
    textKeys.set(role, keys);
  }
  keys.set(content, key);
  textKeyCount++;
  textKeyChars += content.length;
  return key;
}

/** Keys of tool messages with plain-text content, checked against the fields they were computed from. */
const keyCache = new WeakMap<Message, { content: string; toolCallId: string | undefined; key: string }>();

/** The canonical JSON (sorted keys, no nulls) that `messageHash` hashes; plain-text messages skip the generic walk. */
function canonicalMessage(message: Message): string {
  switch (message.role) {
    case 'assistant':
      if (typeof message.content === 'string' && !message.toolCalls?.length) {
        return `{"c":${JSON.stringify(message.content.trim())},"r":"assistant","t":[]}`;
      }
      return canonicalJson(normalizeAssistant(message));
    case 'tool':
      if (typeof message.toolCallId === 'string') {
        return `{"c":${JSON.stringify(message.content.trim())},"id":${JSON.stringify(message.toolCallId)},"r":"tool"}`;
      }
      return canonicalJson({ r: 'tool', id: message.toolCallId, c: message.content.trim() });
    case 'user':
      if (typeof message.content === 'string') return `{"c":${JSON.stringify(message.content.trim())},"r":"user"}`;
      return canonicalJson({ r: 'user', c: message.content });
    case 'system':
      return `{"c":${JSON.stringify(message.content.trim())},"r":"system"}`;
  }
}

function normalizeAssistant(message: AssistantMessage): unknown {
  return {
    r: 'assistant',
    c: (message.content ?? '').trim(),
    t: (message.toolCalls ?? []).map((call) => ({ id: call.id, n: call.name, a: normalizeArguments(call.arguments) })),
  };
}

function normalizeArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Whether `message` is `reply` sent back: an assistant message with the same text and the same tool calls (ids aside). */
function sameReply(message: Message, reply: Message): boolean {
  if (message.role !== 'assistant' || reply.role !== 'assistant') return false;
  if (contentText(message.content) !== contentText(reply.content)) return false;
  const calls = message.toolCalls ?? [];
  const replyCalls = reply.toolCalls ?? [];
  return (
    calls.length === replyCalls.length &&
    calls.every((call, i) => call.name === replyCalls[i]?.name && call.arguments === replyCalls[i]?.arguments)
  );
}
