import { LimitError, RolloutConcludedError } from '../errors/troupe-error.ts';
import type { Message, ToolCall, ToolDefinition } from '../model/messages.ts';
import type { ModelRequest } from '../model/model-client.ts';
import type { ModelEndpoint } from './harness.ts';

/** A tool our own loops offer to the model. */
export interface LoopTool {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
}

/**
 * What {@link runToolLoop} takes: the endpoint, the conversation (appended to in place), the tools it
 * may run, the abort signal and a cap on model calls.
 */
export interface ToolLoopOptions {
  /** Where the model is reached (interception). */
  endpoint: ModelEndpoint;
  /** The conversation so far; new messages are appended to it in place. */
  messages: Message[];
  /** The tools the model may call; each call runs the matching `run`. */
  tools: LoopTool[];
  /** Aborts the loop between and during tool calls. */
  signal: AbortSignal;
  /** Safety cap on model calls in one segment (interception limits apply as well). */
  maxSteps?: number;
}

/** What one segment of {@link runToolLoop} produced, and whether interception ended the rollout. */
export interface ToolLoopResult {
  /** Messages added in this segment (assistant replies and tool results). */
  added: Message[];
  /** True when interception refused to continue (a limit or the rollout ended). */
  stopped: boolean;
}

/**
 * The loop of the built-in harnesses: call the model; run each tool call and append its
 * result; repeat until a reply has no tool calls. Calls go through `endpoint.direct`, the
 * same interception handler and recording that HTTP programs use.
 */
export async function runToolLoop(options: ToolLoopOptions): Promise<ToolLoopResult> {
  const { endpoint, messages, tools, signal } = options;
  const byName = new Map(tools.map((t) => [t.definition.name, t]));
  const added: Message[] = [];
  const maxSteps = options.maxSteps ?? 1000;
  for (let step = 0; step < maxSteps; step++) {
    signal.throwIfAborted();
    const reply = await callLoopModel(endpoint, messages, tools, { signal });
    if (reply === null) return { added, stopped: true };
    messages.push(reply);
    added.push(reply);
    const calls = reply.role === 'assistant' ? (reply.toolCalls ?? []) : [];
    if (calls.length === 0 || tools.length === 0) return { added, stopped: false };
    for (const call of calls) {
      const result: Message = { role: 'tool', toolCallId: call.id, content: await runTool(byName, call, signal) };
      messages.push(result);
      added.push(result);
    }
  }
  return { added, stopped: true };
}

/**
 * One model call of a loop over `messages` (copied into the request) offering `tools`: the reply,
 * or null when interception refused to continue (a limit, or the rollout ended); other errors
 * reject. The step {@link runToolLoop} repeats, and the whole turn of a loop without tools.
 * @internal
 */
export function callLoopModel(
  endpoint: ModelEndpoint,
  messages: readonly Message[],
  tools: readonly LoopTool[],
  options: { signal: AbortSignal },
): Promise<Message | null> {
  return endpoint.direct(loopRequest(endpoint, messages, tools), options).then(replyOf, stoppedByInterception);
}

/**
 * The request of one model call of a loop: `messages` copied (the loop appends to its own list),
 * the tools' definitions when it offers any, no sampling of its own (interception imposes the run's).
 * @internal
 */
export function loopRequest(endpoint: ModelEndpoint, messages: readonly Message[], tools: readonly LoopTool[]): ModelRequest {
  return tools.length
    ? { model: endpoint.model, messages: [...messages], tools: tools.map((t) => t.definition), sampling: {} }
    : { model: endpoint.model, messages: [...messages], sampling: {} };
}

function replyOf(response: { message: Message }): Message {
  return response.message;
}

/** Whether `error` is one of interception's refusals (a limit reached, the rollout concluded). @internal */
export function isInterceptionStop(error: unknown): boolean {
  return LimitError.is(error) || RolloutConcludedError.is(error);
}

/** null for interception's refusals (see {@link isInterceptionStop}); rethrows the rest. */
function stoppedByInterception(error: unknown): null {
  if (isInterceptionStop(error)) return null;
  throw error;
}

async function runTool(byName: Map<string, LoopTool>, call: ToolCall, signal: AbortSignal): Promise<string> {
  const tool = byName.get(call.name);
  if (!tool) return `error: unknown tool ${JSON.stringify(call.name)}; available: ${[...byName.keys()].join(', ')}`;
  let args: unknown;
  try {
    args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
  } catch (error) {
    return `error: tool arguments are not valid JSON (${(error as Error).message})`;
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return 'error: tool arguments must be a JSON object';
  try {
    return await tool.run(args as Record<string, unknown>, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    return `error: ${(error as Error).message ?? String(error)}`;
  }
}
