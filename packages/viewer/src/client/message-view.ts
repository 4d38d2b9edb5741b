// One item of a trace column: a message (with reasoning, tool calls, the call's usage, its raw
// request and response, its tokens) or a failed model call.
import { callDetails, policyVersionOf } from './call-detail.ts';
import { h } from './dom.ts';
import { fmt } from './format.ts';
import { tokenDetails } from './token-view.ts';
import { CLAMP, contentToText, type TraceItem } from './trace-items.ts';
import type { ModelCall, ToolCall, TraceRecord } from './types.ts';
import { badge } from './widgets.ts';

/** A text block, clamped to CLAMP characters with a "show all" toggle. */
export function textBlock(text: string, cls?: string): HTMLElement {
  const el = h('div', { class: `text ${cls || ''}` });
  if (text.length <= CLAMP) {
    el.textContent = text;
    return el;
  }
  const body = h('span', { text: `${text.slice(0, CLAMP)}…` });
  const more = h('button', {
    class: 'btn link',
    text: `show all ${fmt.int(text.length)} characters`,
    onclick: () => {
      const open = more.dataset.open === '1';
      body.textContent = open ? `${text.slice(0, CLAMP)}…` : text;
      more.textContent = open ? `show all ${fmt.int(text.length)} characters` : 'show less';
      more.dataset.open = open ? '0' : '1';
    },
  });
  el.append(body, h('div', {}, more));
  return el;
}

function toolArguments(raw: string): { label: string; text: string } {
  try {
    const value: unknown = JSON.parse(raw);
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const entries = Object.entries(value);
      const only = entries[0];
      if (entries.length === 1 && only && typeof only[1] === 'string') return { label: only[0], text: only[1] };
    }
    return { label: 'arguments', text: JSON.stringify(value, null, 2) };
  } catch {
    return { label: 'arguments (not JSON)', text: raw };
  }
}

function callMeta(call: ModelCall, number: number, version: string | null): HTMLElement {
  const usage = call.usage;
  const parts = [`call ${number}`, fmt.ms(call.durationMs)];
  if (usage) {
    let tok = `${fmt.int(usage.promptTokens)} → ${fmt.int(usage.completionTokens)} tok`;
    if (usage.cachedInputTokens) tok += ` (${fmt.int(usage.cachedInputTokens)} cached)`;
    if (usage.reasoningTokens) tok += ` · ${fmt.int(usage.reasoningTokens)} reasoning`;
    parts.push(tok);
    if (usage.cost) parts.push(fmt.cost(usage.cost));
  }
  if (call.finishReason) parts.push(call.finishReason);
  if (version !== null) parts.push(`policy v${version}`);
  return h('span', {
    class: `call-meta ${call.finishReason === 'length' ? 'warn-text' : ''}`,
    title: `${call.model} · ${call.dialect} · sampling ${JSON.stringify(call.sampling)}`,
    text: parts.join(' · '),
  });
}

function failedCall(trace: TraceRecord, call: ModelCall, number: number): HTMLElement {
  return h(
    'div',
    { class: 'msg failed-call' },
    h(
      'div',
      { class: 'msg-head' },
      h('span', { class: 'role-tag', text: 'model call failed' }),
      h('span', { class: 'spacer' }),
      callMeta(call, number, policyVersionOf(call, trace)),
    ),
    h(
      'div',
      { class: 'text' },
      h('b', { text: call.error ? call.error.type : 'Error' }),
      call.error?.statusCode ? ` (HTTP ${call.error.statusCode})` : '',
      `: ${call.error ? call.error.message : 'unknown'}`,
    ),
    callDetails(trace, call, undefined),
  );
}

function toolCallBlock(tc: ToolCall): HTMLElement {
  const args = toolArguments(tc.arguments);
  return h(
    'div',
    { class: 'tool-call' },
    h(
      'div',
      { class: 'tool-call-head' },
      h('span', { class: 'tool-icon', text: '▶' }),
      h('b', { text: tc.name }),
      h('span', { class: 'muted small', text: ` ${tc.id}` }),
      h('span', { class: 'spacer' }),
      h('span', { class: 'muted small', text: args.label }),
    ),
    h('pre', { class: 'code', text: args.text }),
  );
}

/** Renders one item of `trace`'s column. */
export function renderItem(trace: TraceRecord, item: TraceItem): HTMLElement {
  if (item.kind === 'failed') return failedCall(trace, item.call, item.number);
  const { node, call } = item;
  const m = node.message;
  const role = m.role;
  const isError = m.role === 'tool' && m.isError;
  const version = call ? policyVersionOf(call.call, trace) : null;
  const el = h('div', { class: `msg role-${role} ${isError ? 'tool-error' : ''}`, 'data-node': node.id });
  el.append(
    h(
      'div',
      { class: 'msg-head' },
      h('span', { class: 'role-tag', text: role === 'tool' ? 'tool result' : role }),
      m.role === 'tool'
        ? h('span', { class: 'tool-ref', text: `${item.toolNames.get(m.toolCallId) || '?'} · ${m.toolCallId}` })
        : null,
      isError ? badge('error', 'err') : null,
      h('span', { class: 'node-id', text: `#${node.id}`, title: `node ${node.id}, parent ${node.parent}` }),
      item.branch
        ? h('span', {
            class: 'branch',
            text: `↳ from #${node.parent}`,
            title: 'this node continues an earlier message, not the one above (a new branch)',
          })
        : null,
      node.sampled && node.tokenIds
        ? h('span', {
            class: 'muted small',
            text: `${fmt.int(node.mask ? node.mask.filter(Boolean).length : node.tokenIds.length)} sampled tokens`,
          })
        : null,
      h('span', { class: 'spacer' }),
      call ? callMeta(call.call, call.number, version) : null,
    ),
  );
  if (m.role === 'assistant' && m.reasoning) {
    el.append(
      h(
        'details',
        { class: 'reasoning' },
        h('summary', { text: `Reasoning · ${fmt.int(m.reasoning.length)} characters` }),
        textBlock(m.reasoning, 'reasoning-text'),
      ),
    );
  }
  const text = contentToText(m.content);
  if (text) el.append(textBlock(text, role === 'tool' ? 'mono' : ''));
  else if (role === 'tool') el.append(h('div', { class: 'text muted small', text: '(empty output)' }));
  if (m.role === 'assistant') {
    for (const tc of m.toolCalls ?? []) el.append(toolCallBlock(tc));
  }
  if (node.sampled && node.tokenIds?.length) el.append(tokenDetails(node, version));
  if (call) el.append(callDetails(trace, call.call, node));
  return el;
}
