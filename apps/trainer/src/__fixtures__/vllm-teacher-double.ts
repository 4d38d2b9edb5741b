// A loopback stand-in for a vLLM server's token-in scoring route, `POST /inference/v1/generate`,
// as prime-rl's opd teacher calls it. It follows vLLM's rules for the request fields prime-rl
// sends and how vLLM refuses them, read at vllm-project/vllm (commits named beside each rule):
//   protocol.py = vllm/entrypoints/scale_out/token_in_token_out/protocol.py @ 006ebac2
//   serving.py  = vllm/entrypoints/scale_out/token_in_token_out/serving.py  @ 00a80787
//   input.py    = vllm/v1/engine/input_processor.py                          @ 009daaee
// Written from those rules, not copied. The model behind it is any next-token distribution
// (a frozen checkpoint or a scripted one).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The model the double serves: its name, sizes and next-token log-probabilities. */
export interface DoubleModel {
  /** The served model name (`--served-model-name`); any other `model` is a 404. */
  name: string;
  vocabSize: number;
  /** `--max-model-len`. */
  maxModelLen: number;
  /** `--max-logprobs` (vLLM's default 20). */
  maxLogprobs?: number;
  /** Log-probabilities of every next token after `prefix` (length `vocabSize`), temperature 1. */
  nextLogprobs(prefix: readonly number[]): Promise<ArrayLike<number>> | ArrayLike<number>;
}

/** A running double: its base URL (with `/v1`, as users configure an OpenAI-compatible server), its API key and the requests it answered. */
export interface TeacherDouble {
  baseUrl: string;
  apiKey: string;
  /** Each request body it received, parsed. */
  requests: Record<string, unknown>[];
  /** Makes the next `count` requests answer 503 (a server restarting), to exercise retries. */
  failNext(count: number): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 8 << 20;

/** vLLM's error body (`ErrorResponse`: `{ error: { message, type, param, code } }`). */
function refuse(res: ServerResponse, status: number, type: string, message: string, param: string | null = null): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type, param, code: status } }));
}

const SAMPLING_FIELDS = new Set(['max_tokens', 'temperature', 'top_p', 'prompt_logprobs', 'logprobs', 'n', 'seed', 'detokenize']);

/** Checks a request as vLLM does; returns the refusal or the parsed fields. */
function validate(body: unknown, model: DoubleModel): { status: number; type: string; message: string; param?: string } | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { status: 400, type: 'BadRequestError', message: 'body must be a JSON object' };
  const request = body as Record<string, unknown>;
  // protocol.py GenerateRequest.token_ids: list[int], min_length=1, no negative values (validate_token_ids).
  const ids = request.token_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((t) => Number.isInteger(t)))
    return { status: 400, type: 'BadRequestError', message: 'token_ids: a non-empty list of integers is required', param: 'token_ids' };
  if (ids.some((t) => (t as number) < 0))
    return { status: 400, type: 'BadRequestError', message: 'token_ids must not contain negative values', param: 'token_ids' };
  // protocol.py GenerateRequest.sampling_params: SamplingParams (required; unknown fields refused by its strict msgspec struct).
  const sp = request.sampling_params;
  if (typeof sp !== 'object' || sp === null || Array.isArray(sp))
    return { status: 400, type: 'BadRequestError', message: 'sampling_params: field required', param: 'sampling_params' };
  for (const key of Object.keys(sp))
    if (!SAMPLING_FIELDS.has(key))
      return { status: 400, type: 'BadRequestError', message: `sampling_params.${key}: not supported by this double`, param: key };
  // serving.py ServingTokens.serve_tokens: _check_model first — an unknown model is a 404 NotFoundError.
  if (request.model !== undefined && request.model !== null && request.model !== model.name)
    return { status: 404, type: 'NotFoundError', message: `The model \`${String(request.model)}\` does not exist.`, param: 'model' };
  // sampling_params.py SamplingParams.verify: prompt_logprobs above --max-logprobs (-1 = vocab size) is refused.
  const max = model.maxLogprobs ?? 20;
  const prompt = (sp as Record<string, unknown>).prompt_logprobs;
  if (prompt !== undefined && prompt !== null) {
    if (!Number.isInteger(prompt) || (prompt as number) < -1)
      return { status: 400, type: 'BadRequestError', message: `prompt_logprobs must be non-negative or -1, got ${prompt}.`, param: 'prompt_logprobs' };
    const asked = prompt === -1 ? model.vocabSize : (prompt as number);
    if (asked > max)
      return {
        status: 400,
        type: 'BadRequestError',
        message: `Requested prompt logprobs of ${asked}, which is greater than max allowed: ${max}`,
        param: 'prompt_logprobs',
      };
  }
  const maxTokens = (sp as Record<string, unknown>).max_tokens;
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1))
    return { status: 400, type: 'BadRequestError', message: `max_tokens must be at least 1, got ${maxTokens}.`, param: 'max_tokens' };
  // input.py InputProcessor._validate_prompt_len: longer than max_model_len, or equal to it (no room for one output token).
  if (ids.length > model.maxModelLen)
    return {
      status: 400,
      type: 'BadRequestError',
      message: `The decoder prompt (length ${ids.length}) is longer than the maximum model length of ${model.maxModelLen}. Make sure that \`max_model_len\` is no smaller than the number of text tokens.`,
    };
  if (ids.length === model.maxModelLen)
    return {
      status: 400,
      type: 'BadRequestError',
      message: `The decoder prompt (length ${ids.length}) plus the number of requested output tokens (at least 1) is longer than the maximum model length of ${model.maxModelLen}.`,
    };
  // input.py InputProcessor._validate_model_input: a token id past the vocabulary is refused.
  const top = Math.max(...(ids as number[]));
  if (top > model.vocabSize - 1) return { status: 400, type: 'BadRequestError', message: `Token id ${top} is out of vocabulary` };
  return null;
}

/** The 1-based rank of `token` in `logprobs` (vLLM's `Logprob.rank`). */
function rankOf(logprobs: ArrayLike<number>, token: number): number {
  const value = logprobs[token] as number;
  let rank = 1;
  for (let i = 0; i < logprobs.length; i++) if ((logprobs[i] as number) > value) rank++;
  return rank;
}

function topK(logprobs: ArrayLike<number>, k: number): number[] {
  return Array.from({ length: logprobs.length }, (_, i) => i)
    .sort((a, b) => (logprobs[b] as number) - (logprobs[a] as number))
    .slice(0, k);
}

/** vLLM's clamp of `-inf` prompt logprobs (serving.py `clamp_prompt_logprobs`: -9999.0). */
const clamp = (x: number) => (x === Number.NEGATIVE_INFINITY ? -9999 : x);

/**
 * The reply body: `prompt_logprobs` has one entry per prompt token — `null` for the first (no
 * context), then a map from token id (a JSON key) to `{ logprob, rank, decoded_token }` holding
 * the prompt token and the top-k (protocol.py `GenerateResponseBase.prompt_logprobs`,
 * `list[dict[int, Logprob] | None]`); `choices[0].token_ids` the one sampled token.
 */
async function answer(request: Record<string, unknown>, model: DoubleModel, id: number): Promise<unknown> {
  const ids = request.token_ids as number[];
  const sp = request.sampling_params as Record<string, unknown>;
  const k = sp.prompt_logprobs === -1 ? model.vocabSize : (sp.prompt_logprobs as number | undefined);
  const prompt_logprobs: (Record<string, { logprob: number; rank: number; decoded_token: null }> | null)[] | null =
    k === undefined || k === null ? null : [null];
  if (prompt_logprobs)
    for (let j = 1; j < ids.length; j++) {
      const lp = await model.nextLogprobs(ids.slice(0, j));
      const token = ids[j] as number;
      const entry: Record<string, { logprob: number; rank: number; decoded_token: null }> = {
        [token]: { logprob: clamp(lp[token] as number), rank: rankOf(lp, token), decoded_token: null },
      };
      for (const t of topK(lp, k as number)) entry[t] ??= { logprob: clamp(lp[t] as number), rank: rankOf(lp, t), decoded_token: null };
      prompt_logprobs.push(entry);
    }
  const last = await model.nextLogprobs(ids);
  const sampled = topK(last, 1)[0] as number;
  return {
    request_id: `generate-tokens-${id}`,
    model: model.name,
    choices: [{ index: 0, finish_reason: 'length', token_ids: [sampled], logprobs: null }],
    usage: { prompt_tokens: ids.length, completion_tokens: 1, total_tokens: ids.length + 1 },
    prompt_logprobs,
  };
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(null);
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(null));
  });
}

/**
 * Starts the double on 127.0.0.1 (a random port). Every request must carry `Authorization: Bearer
 * <key>` (a 401 otherwise), as every local server of this project is authenticated. This is
 * stricter than vLLM: its `--api-key` middleware guards the paths under `/v1` only (the
 * `AuthenticationMiddleware` of vllm/entrypoints/openai/server_utils.py), so a bare vLLM does not
 * check the key on `/inference/v1/generate`; prime-rl sends it anyway (`client.py:31-35`).
 */
export async function startTeacherDouble(model: DoubleModel): Promise<TeacherDouble> {
  const apiKey = randomBytes(16).toString('hex');
  const requests: Record<string, unknown>[] = [];
  let failures = 0;
  let served = 0;
  const server: Server = createServer(async (req, res) => {
    try {
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'Unauthorized' }));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/inference/v1/generate')
        return refuse(res, 404, 'NotFoundError', `no route ${req.method} ${req.url}`);
      const text = await readBody(req);
      if (text === null) return refuse(res, 413, 'BadRequestError', 'request body too large');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return refuse(res, 400, 'BadRequestError', 'body is not JSON');
      }
      requests.push(body as Record<string, unknown>);
      if (failures > 0) {
        failures--;
        return refuse(res, 503, 'ServiceUnavailableError', 'the engine is restarting');
      }
      const bad = validate(body, model);
      if (bad) return refuse(res, bad.status, bad.type, bad.message, bad.param ?? null);
      const reply = await answer(body as Record<string, unknown>, model, ++served);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    } catch (error) {
      refuse(res, 500, 'InternalServerError', (error as Error).message);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    failNext(count) {
      failures = count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
