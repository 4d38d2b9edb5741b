import { parseStrictJson } from '../env/builtin/agentic-judge/strict-json.ts';
import { RewardError } from '../errors/troupe-error.ts';
import type { JudgeCallRecord } from '../eval/pricing.ts';
import { contentText } from '../model/messages.ts';
import type { ModelClient, Sampling } from '../model/model-client.ts';
import type { TaskContext } from '../task/task.ts';
import type { Trace } from '../trace/trace.ts';

/** The model a single-call judge asks: a client (its own default model), or a client with a model and sampling. */
export type JudgeModel = ModelClient | { client: ModelClient; model?: string; sampling?: Sampling };

/** What part of the run a judge reads: the last reply (default) or the whole transcript. */
export type JudgeView = 'last_reply' | 'full_trace';

function resolve(model: JudgeModel): { client: ModelClient; model: string; sampling: Sampling } {
  if ('complete' in model) return { client: model, model: model.model, sampling: {} };
  return { client: model.client, model: model.model ?? model.client.model, sampling: model.sampling ?? {} };
}

/**
 * Makes one judge model call and records it on the trace apart from the agent's calls: in
 * `trace.info.judgeCalls` (model, usage, reply, error) and its usage in `trace.extraUsage`. The
 * call never enters the message graph or `trace.calls`, so it is never trainable. A failed call
 * is recorded and rethrown as a `RewardError` naming the judge.
 */
export async function callJudge(options: { judge: string; model: JudgeModel; trace: Trace; prompt: string }): Promise<string> {
  const { client, model, sampling } = resolve(options.model);
  const startedAt = Date.now();
  const calls = (options.trace.info.judgeCalls ??= []) as JudgeCallRecord[];
  try {
    const response = await client.complete({ model, messages: [{ role: 'user', content: options.prompt }], sampling });
    const reply = response.message.content ?? '';
    calls.push({
      judge: options.judge,
      model: response.model || model,
      usage: response.usage,
      durationMs: Date.now() - startedAt,
      reply,
    });
    options.trace.extraUsage.push(response.usage);
    return reply;
  } catch (error) {
    const message = (error as Error)?.message ?? String(error);
    calls.push({
      judge: options.judge,
      model,
      durationMs: Date.now() - startedAt,
      error: { type: (error as Error)?.name ?? 'Error', message },
    });
    throw new RewardError(`judge ${options.judge}: model call to ${model} failed: ${message}`, { cause: error });
  }
}

/** The text a judge reads of the run: the last reply, or every message of the last branch. */
export function judgedText(context: TaskContext, view: JudgeView, answerField?: string): string {
  if (answerField) {
    const value = (context.task.data as Record<string, unknown>)[answerField];
    if (value === undefined) throw new RewardError(`judge: task data has no field ${JSON.stringify(answerField)}`);
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  if (view === 'last_reply') return context.trace.lastReply;
  return context.trace.messages
    .map((m) => {
      const text = m.role === 'assistant' ? (m.content ?? '') : contentText(m.content);
      const calls = m.role === 'assistant' && m.toolCalls?.length ? `\n[tool calls] ${JSON.stringify(m.toolCalls)}` : '';
      return `## ${m.role}\n${text}${calls}`;
    })
    .join('\n\n');
}

/** The question a judge is told about: a task data field, or the task's prompt text. */
export function judgedQuestion(context: TaskContext, questionField?: string): string {
  if (!questionField) return context.task.promptText;
  const value = (context.task.data as Record<string, unknown>)[questionField];
  if (value === undefined) throw new RewardError(`judge: task data has no field ${JSON.stringify(questionField)}`);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The first JSON object in a reply that has `key` (a fenced block, the whole reply, or any
 * balanced `{…}`), or undefined.
 */
export function firstJsonObjectWith(reply: string, key: string): Record<string, unknown> | undefined {
  for (let start = reply.indexOf('{'); start >= 0; start = reply.indexOf('{', start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < reply.length; i++) {
      const ch = reply[i];
      if (inString) {
        if (ch === '\\') i++;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) {
        try {
          const text = reply.slice(start, i + 1);
          const value: unknown = JSON.parse(text);
          if (value && typeof value === 'object' && !Array.isArray(value) && key in value) {
            // The verdict object itself must be unambiguous: no duplicate keys, no invisible characters.
            return parseStrictJson(text, 'the judge verdict') as Record<string, unknown>;
          }
        } catch (error) {
          if ((error as Error)?.name === 'ParseError') throw error;
          // not JSON: try the next `{`
        }
        break;
      }
    }
  }
  return undefined;
}
