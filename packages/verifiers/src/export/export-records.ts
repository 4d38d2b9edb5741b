import { contentText, type Message, type ToolDefinition } from '../model/messages.ts';
import type { Episode } from '../trace/episode.ts';
import type { Trace } from '../trace/trace.ts';
import { filterFields, parseFilter } from './export-filter.ts';

// A run's traces as records in the shapes Hugging Face TRL's trainers read (`troupe export`).

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
