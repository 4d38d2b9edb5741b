import type { LogprobScorer } from '@troupe/prime-rl';
import { ProviderError, WireError } from '@troupe/verifiers';
import { isRetryableStatus, postJson, RetryOptionsSchema, retryAfterMs, withRetry } from '@troupe/verifiers/internal';

/** What {@link endpointTeacher} connects to. */
export interface EndpointTeacherOptions {
  /** The server's OpenAI-compatible base URL (`http://host:8000/v1`). */
  baseUrl: string;
  /** The served model's name (the request's `model`). */
  model: string;
  /** The API key (`Authorization: Bearer`), already read from its environment variable; never logged. */
  apiKey?: string | undefined;
  /** Whole-call timeout of one attempt (default 60000 ms). */
  timeoutMs?: number | undefined;
  /** The config path errors name (`train.source[0].algorithm.teacher`). */
  field: string;
  /** Retries after the first attempt (default 3; backoff as the core model client's). */
  maxRetries?: number | undefined;
  /** Backoff base in milliseconds (default 500). */
  baseDelayMs?: number | undefined;
}

/**
 * The scoring route of a vLLM server: `/inference/v1/generate` at the server's root, not under
 * `/v1` (prime-rl strips a trailing `/v1` from the base URL, `src/prime_rl/utils/client.py:486-493`
 * at 559b447).
 */
export function teacherScoreUrl(baseUrl: string): URL {
  const root = baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  return new URL(`${root}/inference/v1/generate`);
}

/**
 * The request that prefill-scores one branch: its token ids as the prompt, one sampled token, and
 * the logprob of each prompt token at temperature 1 (prime-rl's body,
 * `src/prime_rl/utils/client.py:494-499` at 559b447: `model`, `token_ids`, `sampling_params` with
 * `max_tokens: 1, temperature: 1.0, top_p: 1.0, prompt_logprobs: 1`).
 */
export function teacherScoreRequest(model: string, tokenIds: readonly number[]) {
  return {
    model,
    token_ids: [...tokenIds],
    sampling_params: { max_tokens: 1, temperature: 1, top_p: 1, prompt_logprobs: 1 },
  };
}

/** A reply that is not the shape the scoring route returns: the server's fault, not retried. */
class TeacherReplyError extends WireError {}

/**
 * Aligns a scoring reply's `prompt_logprobs` to the branch's tokens: one entry per token; the first
 * is `null` (no context) and scores 0; entry i maps token ids (JSON keys) to `{ logprob, rank }` and
 * must hold `tokenIds[i]` — the prompt token is always among them, beside the top-k (vLLM
 * `GenerateResponseBase.prompt_logprobs: list[dict[int, Logprob] | None]`,
 * `vllm/entrypoints/scale_out/token_in_token_out/protocol.py` at 006ebac). prime-rl reads the
 * dict's first value (`client.py:502-513`); this reads the entry of the token itself, so a server
 * that lists the top-1 first still aligns. A `-9999` (vLLM's clamp of `-inf`) is kept as is.
 */
export function alignPromptLogprobs(reply: unknown, tokenIds: readonly number[], where: string): number[] {
  const entries = (reply as { prompt_logprobs?: unknown } | null)?.prompt_logprobs;
  if (!Array.isArray(entries))
    throw new TeacherReplyError(
      `${where}: the reply has no prompt_logprobs list (is the server vLLM with /inference/v1/generate?)`,
    );
  if (entries.length !== tokenIds.length)
    throw new TeacherReplyError(`${where}: prompt_logprobs has ${entries.length} entries for ${tokenIds.length} tokens`);
  return entries.map((entry, i) => {
    if (i === 0 && (entry === null || entry === undefined)) return 0;
    const token = tokenIds[i] as number;
    const value = (entry as Record<string, { logprob?: unknown }> | null)?.[String(token)]?.logprob;
    if (typeof value !== 'number' || !Number.isFinite(value) || value > 0)
      throw new TeacherReplyError(`${where}: prompt_logprobs[${i}] has no logprob for token ${token}`);
    return value;
  });
}

function classify(error: unknown) {
  if (error instanceof TeacherReplyError) return { retry: false };
  const status = (error as { status?: unknown })?.status;
  if (typeof status === 'number') {
    if (!isRetryableStatus(status)) return { retry: false };
    const after = retryAfterMs((error as { headers?: Headers }).headers ?? null);
    return after === undefined ? { retry: true } : { retry: true, retryAfterMs: after };
  }
  return { retry: true };
}

/**
 * opd's endpoint teacher: a {@link LogprobScorer} that prefill-scores each branch on a vLLM-style
 * server with prime-rl's request ({@link teacherScoreRequest}) through the core model client's
 * transport and retry policy (retries on connection failures, timeouts, 408/409/429/5xx, honouring
 * `retry-after`; a 4xx is final). Failures are `ProviderError`s naming the endpoint, the model and
 * the teacher's config path; a refusal carries the server's own message.
 */
export function endpointTeacher(options: EndpointTeacherOptions): LogprobScorer {
  const url = teacherScoreUrl(options.baseUrl);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const policy = RetryOptionsSchema.parse({
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
    ...(options.baseDelayMs !== undefined ? { baseDelayMs: options.baseDelayMs } : {}),
  });
  const where = `${options.field} (endpoint ${url.href}, model ${options.model})`;
  return {
    async score(tokenIds) {
      const body = JSON.stringify(teacherScoreRequest(options.model, tokenIds));
      let attempts = 0;
      try {
        return await withRetry(
          async () => {
            attempts++;
            const reply = await postJson(url, body, { headers, timeoutMs: options.timeoutMs ?? 60_000 });
            return alignPromptLogprobs(reply, tokenIds, where);
          },
          { policy, classify },
        );
      } catch (error) {
        const after = attempts > 1 ? ` (after ${attempts} attempts)` : '';
        if (error instanceof TeacherReplyError) throw new ProviderError(`${error.message}${after}`, { statusCode: 502 });
        const status = (error as { status?: unknown })?.status;
        const message = (error as Error)?.message ?? String(error);
        if (typeof status === 'number')
          throw new ProviderError(`${where}: the teacher answered ${status}: ${message}${after}`, {
            cause: error,
            statusCode: status,
          });
        const cause = (error as { cause?: { message?: string } })?.cause?.message;
        const detail = cause && !message.includes(cause) ? ` (${cause})` : '';
        throw new ProviderError(`${where}: the teacher call failed: ${message}${detail}${after}`, {
          cause: error,
          statusCode: 502,
        });
      }
    },
  };
}
