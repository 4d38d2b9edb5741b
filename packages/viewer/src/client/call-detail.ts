// One model call as recorded on the trace: the request (model, prompt messages, tools, sampling)
// and the response (message, finish reason, usage, token ids and logprobs), and the policy version
// that served it. The trace stores calls in the dialect-neutral form, not the wire bytes.
import { h } from './dom.ts';
import { promptMessages } from './trace-items.ts';
import type { MessageNode, ModelCall, TraceRecord } from './types.ts';
import { prettyJson } from './widgets.ts';

/**
 * The policy version that served a call: the call's `policyVersion` (recorded when a trainer's
 * policy served it), else the trace's `info.policyVersion` (an env may stamp one); null when the
 * run records none.
 */
export function policyVersionOf(call: ModelCall | undefined, trace: TraceRecord): string | null {
  const value = call?.policyVersion ?? trace.info?.policyVersion;
  return typeof value === 'number' || typeof value === 'string' ? String(value) : null;
}

/** The request of a call, rebuilt from the trace: the prompt chain, the tools offered, sampling. */
export function callRequest(trace: TraceRecord, call: ModelCall): Record<string, unknown> {
  const request: Record<string, unknown> = {
    model: call.model,
    dialect: call.dialect,
    messages: promptMessages(trace, call.promptNode),
    sampling: call.sampling,
  };
  if (call.numTools)
    request.tools = trace.tools.length === call.numTools ? trace.tools : { offered: call.numTools, recorded: trace.tools };
  return request;
}

/** The response of a call: the sampled node's message with its tokens, or the call's error. */
export function callResponse(call: ModelCall, node: MessageNode | undefined): Record<string, unknown> {
  if (call.error || !node) return { error: call.error ?? { type: 'Error', message: 'no sampled node recorded' } };
  const response: Record<string, unknown> = {
    model: call.model,
    message: node.message,
    finishReason: call.finishReason,
    usage: call.usage,
  };
  if (call.policyVersion !== undefined) response.policyVersion = call.policyVersion;
  if (node.tokenIds) {
    response.tokenIds = node.tokenIds;
    response.mask = node.mask;
    response.logprobs = node.logprobs;
    if (node.advantages) response.advantages = node.advantages;
    else if (node.advantage !== undefined) response.advantage = node.advantage;
  }
  return response;
}

/**
 * A folded "request · response" block. Its JSON is built when first opened, so a long trace
 * renders as fast as before.
 */
export function callDetails(trace: TraceRecord, call: ModelCall, node: MessageNode | undefined): HTMLElement {
  const version = policyVersionOf(call, trace);
  const body = h('div', { class: 'call-raw-body' });
  const el = h(
    'details',
    { class: 'call-raw', 'data-testid': 'raw-call' },
    h('summary', { text: `Raw request · response${version === null ? '' : ` · policy v${version}`}` }),
    body,
  );
  el.addEventListener('toggle', () => {
    if (!el.open || body.childElementCount) return;
    body.append(
      h(
        'div',
        { class: 'call-raw-meta small muted' },
        `policy version: ${version ?? 'not recorded'} · started ${new Date(call.startedAt).toISOString()} · `,
        'as recorded on the trace (dialect-neutral form, not the wire bytes)',
      ),
      h('div', { class: 'section-label', text: 'Request' }),
      h('pre', { class: 'code raw-request', text: prettyJson(callRequest(trace, call)) }),
      h('div', { class: 'section-label', text: 'Response' }),
      h('pre', { class: 'code raw-response', text: prettyJson(callResponse(call, node)) }),
    );
  });
  return el;
}
