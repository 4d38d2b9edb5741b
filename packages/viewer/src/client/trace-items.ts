// A trace as the list of items its column shows: nodes in order, failed calls after their prompt.
import type { Message, MessageNode, ModelCall, TraceRecord } from './types.ts';

/** A model call with its 1-based position in the trace. */
export interface NumberedCall {
  call: ModelCall;
  number: number;
}

export type TraceItem =
  | ({ kind: 'failed' } & NumberedCall)
  | { kind: 'node'; node: MessageNode; branch: boolean; call: NumberedCall | undefined; toolNames: Map<string, string> };

/** Characters of a message shown before "show all". */
export const CLAMP = 2400;

export function contentToText(content: Message['content'] | null | undefined): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) =>
      part.type === 'text' ? part.text : `[image${part.mediaType ? ` ${part.mediaType}` : ''}: ${String(part.url).slice(0, 80)}]`,
    )
    .join('\n\n');
}

/** The items shown in one trace's column: its nodes in order, with failed calls after their prompt. */
export function traceItems(trace: TraceRecord): TraceItem[] {
  const callByNode = new Map<number, NumberedCall>();
  const failedAfter = new Map<number, NumberedCall[]>();
  trace.calls.forEach((call, k) => {
    if (call.node !== undefined && call.node !== null) callByNode.set(call.node, { call, number: k + 1 });
    else {
      const key = call.promptNode ?? -1;
      let list = failedAfter.get(key);
      if (!list) failedAfter.set(key, (list = []));
      list.push({ call, number: k + 1 });
    }
  });
  const toolNames = new Map<string, string>();
  for (const node of trace.nodes)
    if (node.message.role === 'assistant') for (const tc of node.message.toolCalls ?? []) toolNames.set(tc.id, tc.name);
  const items: TraceItem[] = [];
  for (const failed of failedAfter.get(-1) ?? []) items.push({ kind: 'failed', ...failed });
  let previous: number | null = null;
  for (const node of trace.nodes) {
    items.push({
      kind: 'node',
      node,
      branch: node.parent !== null && node.parent !== previous,
      call: callByNode.get(node.id),
      toolNames,
    });
    previous = node.id;
    for (const failed of failedAfter.get(node.id) ?? []) items.push({ kind: 'failed', ...failed });
  }
  return items;
}

/** An estimated height in pixels, before the item is rendered and measured. */
export function estimateItem(item: TraceItem): number {
  if (item.kind === 'failed') return 70;
  const m = item.node.message;
  const text = contentToText(m.content);
  let chars = text.length;
  if (m.role === 'assistant') for (const tc of m.toolCalls ?? []) chars += tc.arguments.length + 40;
  const lines = Math.min(60, Math.ceil(Math.min(chars, CLAMP) / 60) + (text.match(/\n/g) ?? []).length);
  return 48 + lines * 20 + (m.role === 'assistant' && m.reasoning ? 30 : 0);
}

/** The messages of a call's request: the prompt chain from the root to `promptNode`. */
export function promptMessages(trace: TraceRecord, promptNode: number | null | undefined): Message[] {
  const out: Message[] = [];
  let id = promptNode ?? null;
  const seen = new Set<number>();
  while (id !== null && !seen.has(id)) {
    seen.add(id);
    const byPosition = trace.nodes[id];
    const node = byPosition?.id === id ? byPosition : trace.nodes.find((n) => n.id === id);
    if (!node) break;
    out.push(node.message);
    id = node.parent;
  }
  return out.reverse();
}
