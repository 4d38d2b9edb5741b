import {
  isNullish,
  isNumber,
  isObject,
  isPlainObject,
  isStringArray,
  isTextOrTyped,
  nullishBoolean,
  nullishCount,
  nullishInt,
  nullishPositiveInt,
  nullishString,
} from './json-checks.ts';
import type { ChatCompletion, ChatRequest } from './openai-chat.ts';

/**
 * Quick checks of the two chat bodies every intercepted call carries: the program's request and
 * the model's reply. Each answers true only for a body its zod schema (`ChatRequestSchema`,
 * `ChatCompletionSchema`) accepts, walking it without copying it; for anything else, including
 * shapes it does not bother with, it answers false and the caller parses with the schema, which
 * names the bad field. Zod's parse rebuilds every object of a body and cost more than the rest of
 * the request's translation (measured in `bench:interception`). A property test holds the
 * checks to the schemas.
 */

function isToolCalls(value: unknown): boolean {
  if (isNullish(value)) return true;
  if (!Array.isArray(value)) return false;
  for (const call of value) {
    if (!isObject(call) || typeof call.id !== 'string') return false;
    if (call.type !== undefined && typeof call.type !== 'string') return false;
    const fn = call.function;
    if (!isObject(fn) || typeof fn.name !== 'string') return false;
    const args = fn.arguments;
    if (!isNullish(args) && typeof args !== 'string' && !isPlainObject(args)) return false;
  }
  return true;
}

function isMessage(message: unknown): boolean {
  if (!isObject(message)) return false;
  switch (message.role) {
    case 'system':
    case 'developer':
    case 'user':
      return isTextOrTyped(message.content);
    case 'assistant':
      return (
        (isNullish(message.content) || isTextOrTyped(message.content)) &&
        isToolCalls(message.tool_calls) &&
        nullishString(message.reasoning_content) &&
        nullishString(message.reasoning)
      );
    case 'tool':
      return typeof message.tool_call_id === 'string' && isTextOrTyped(message.content);
    default:
      return false;
  }
}

function isTools(value: unknown): boolean {
  if (isNullish(value)) return true;
  if (!Array.isArray(value)) return false;
  for (const tool of value) {
    if (!isObject(tool) || typeof tool.type !== 'string') return false;
    const fn = tool.function;
    if (fn === undefined) continue;
    if (!isObject(fn) || typeof fn.name !== 'string' || !nullishString(fn.description)) return false;
    if (!isNullish(fn.parameters) && !isPlainObject(fn.parameters)) return false;
  }
  return true;
}

function isToolChoice(value: unknown): boolean {
  if (isNullish(value) || value === 'auto' || value === 'none' || value === 'required') return true;
  return isObject(value) && typeof value.type === 'string' && isObject(value.function) && typeof value.function.name === 'string';
}

function isStop(value: unknown): boolean {
  return isNullish(value) || typeof value === 'string' || isStringArray(value);
}

/** In `[min, max]` (or `(min, max]` when `openMin`), or nullish. */
function nullishRange(value: unknown, min: number, max: number, openMin = false): boolean {
  if (isNullish(value)) return true;
  return isNumber(value) && (openMin ? value > min : value >= min) && value <= max;
}

/** True only for a body `ChatRequestSchema` accepts (a false answer means: ask the schema). */
export function isChatRequest(body: unknown): body is ChatRequest {
  if (!isObject(body) || typeof body.model !== 'string' || !Array.isArray(body.messages)) return false;
  for (const message of body.messages) if (!isMessage(message)) return false;
  const options = body.stream_options;
  return (
    isTools(body.tools) &&
    isToolChoice(body.tool_choice) &&
    nullishRange(body.temperature, 0, Number.POSITIVE_INFINITY) &&
    nullishRange(body.top_p, 0, 1, true) &&
    nullishInt(body.top_k) &&
    nullishRange(body.min_p, 0, 1) &&
    nullishPositiveInt(body.max_tokens) &&
    nullishPositiveInt(body.max_completion_tokens) &&
    isStop(body.stop) &&
    nullishInt(body.seed) &&
    nullishString(body.reasoning_effort) &&
    nullishPositiveInt(body.n) &&
    nullishBoolean(body.stream) &&
    (isNullish(options) || (isObject(options) && nullishBoolean(options.include_usage))) &&
    nullishBoolean(body.logprobs) &&
    nullishBoolean(body.return_token_ids)
  );
}

function isIntArray(value: unknown): boolean {
  if (isNullish(value)) return true;
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!Number.isSafeInteger(item)) return false;
  return true;
}

function isLogprobs(value: unknown): boolean {
  if (isNullish(value)) return true;
  if (!isObject(value)) return false;
  const content = value.content;
  if (isNullish(content)) return true;
  if (!Array.isArray(content)) return false;
  for (const entry of content) if (!isObject(entry) || !nullishString(entry.token) || !isNumber(entry.logprob)) return false;
  return true;
}

function isChoice(choice: unknown): boolean {
  if (!isObject(choice)) return false;
  const message = choice.message;
  return (
    isObject(message) &&
    nullishString(message.content) &&
    isToolCalls(message.tool_calls) &&
    nullishString(message.reasoning_content) &&
    nullishString(message.reasoning) &&
    nullishString(choice.finish_reason) &&
    isLogprobs(choice.logprobs) &&
    isIntArray(choice.token_ids) &&
    isIntArray(choice.prompt_token_ids)
  );
}

function isUsage(usage: unknown): boolean {
  if (isNullish(usage)) return true;
  if (!isObject(usage)) return false;
  const prompt = usage.prompt_tokens_details;
  const completion = usage.completion_tokens_details;
  return (
    nullishCount(usage.prompt_tokens) &&
    nullishCount(usage.completion_tokens) &&
    (isNullish(prompt) || (isObject(prompt) && nullishCount(prompt.cached_tokens))) &&
    (isNullish(completion) || (isObject(completion) && nullishCount(completion.reasoning_tokens))) &&
    (isNullish(usage.cost) || (isNumber(usage.cost) && usage.cost >= 0))
  );
}

/** True only for a reply `ChatCompletionSchema` accepts (a false answer means: ask the schema). */
export function isChatCompletion(body: unknown): body is ChatCompletion {
  if (!isObject(body) || !nullishString(body.id) || !nullishString(body.model)) return false;
  const choices = body.choices;
  if (!Array.isArray(choices) || choices.length === 0) return false;
  for (const choice of choices) if (!isChoice(choice)) return false;
  return isUsage(body.usage) && isIntArray(body.prompt_token_ids) && nullishCount(body.policy_version);
}
