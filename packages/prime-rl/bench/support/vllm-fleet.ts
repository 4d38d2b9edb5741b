/**
 * A fleet of vLLM-shaped chat completion servers on loopback for `pnpm bench:fleet`: the replies a
 * prime-rl orchestrator gets from vLLM, pre-encoded, so that the servers take little CPU.
 *
 * What a reply holds follows vLLM's `ChatCompletionResponse` (`vllm/entrypoints/openai/
 * chat_completion/protocol.py:87-144` at 002032e): `choices[0]` with `message` (`role`,
 * `content`, `refusal`, `annotations`, `audio`, `function_call`, `reasoning`; an empty
 * `tool_calls` dropped, :79-84), `logprobs.content[]` with one entry per generated token
 * (`token`, `logprob`, `bytes` = the token's UTF-8 bytes, `top_logprobs` = `[]` when
 * `top_logprobs` is 0: `chat_completion/serving.py` `_create_chat_logprobs`/`_get_top_logprobs`),
 * `finish_reason`, `stop_reason`, `token_ids` (only with `return_token_ids`); then `usage` and the
 * request's `prompt_token_ids` (only with `return_token_ids`, protocol.py `return_token_ids`).
 * Requests are what prime-rl sends (`packages/prime-rl-configs/src/prime_rl/configs/
 * orchestrator.py:58-64` and `:652-655` at 559b447): `temperature`, `top_p` 1, `logprobs` true,
 * and `top_k` −1, `min_p` 0, `return_token_ids` true in the extra body, plus troupe's `cache_salt`.
 *
 * Rules kept, as vLLM keeps them:
 * - a `model` it does not serve is a 404 `NotFoundError` with `param: "model"`
 *   (`vllm/entrypoints/openai/models/serving.py:49-58` at 00153c8; `ErrorResponse`,
 *   `engine/protocol.py:60-68` at d7e5252); an absent or empty name passes;
 * - `cache_salt` must be a string of 1–1,024 characters (protocol.py `cache_salt` field), else 400;
 * - `messages` must be a list, else 400 (pydantic's validation error as vLLM's `BadRequestError`);
 * - `max_tokens` / `max_completion_tokens` cut a longer reply (`finish_reason: "length"`, no
 *   end-of-turn token), and a prompt plus that budget past `maxModelLen` is a 400;
 * - no `logprobs` means `logprobs: null`; no `return_token_ids` means no token ids.
 *
 * Prompt token ids come from Qwen3's chat template (see `renderQwen3Chat` in
 * `@troupe/prime-rl/testing`), one token per special token, newline and space-led word, so a
 * reply's content tokenizes back to its own ids and the next turn's prompt extends the last
 * prompt plus its completion, as with a real tokenizer.
 *
 * Timing: a reply is sent after `latencyMs + tokens × inFlight / tokensPerSecond` ms, where
 * `inFlight` counts the server's requests at arrival (itself included): one server decodes
 * `tokensPerSecond` tokens a second, shared by its requests.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Qwen3's `<|im_start|>` and `<|im_end|>` ids (its tokenizer.json). */
export const IM_START = 151644;
export const IM_END = 151645;
const NEWLINE = 198;
const ROLE_IDS: Record<string, number> = { system: 8948, user: 872, assistant: 77091, tool: 14172, developer: 8948 };

/** Options of {@link VllmFleet}. */
export interface VllmFleetOptions {
  /** Servers, each on its own loopback port (default 8). */
  servers?: number;
  /** Served model name (vLLM `--served-model-name`; default `policy`). */
  model?: string;
  /** Fixed time before any reply, ms (prefill, queueing; default 20). */
  latencyMs?: number;
  /** Decode tokens per second of one server, shared by its requests in flight (default 25,000). */
  tokensPerSecond?: number;
  /** Replies pre-encoded per server (default 64). */
  replies?: number;
  /** Median completion length in tokens; lengths are log-normal (default 320). */
  medianTokens?: number;
  /** σ of the log of the completion length (default 0.7). */
  sigma?: number;
  /** Completion lengths are clipped to [minTokens, maxTokens] (defaults 16, 2,048). */
  minTokens?: number;
  maxTokens?: number;
  /** vLLM `--max-model-len` (default 32,768). */
  maxModelLen?: number;
  /** Seed of the replies (default 1). */
  seed?: number;
}

/** One pre-encoded reply: its content, token ids, logprobs, and the JSON of its choice. */
interface Reply {
  content: string;
  tokenIds: number[];
  logprobs: number[];
  pieces: string[];
  /** `"choices":[…]` with logprobs and token ids, as bytes. */
  full: Buffer;
}

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LETTERS = 'etaoinshrdlcumwfgypbvkjxqz';

/** The vocabulary of generated words: ` word` pieces with ids 1,000 + index. */
function vocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const length = 1 + Math.floor(random() * 7);
    let word = ' ';
    for (let i = 0; i < length; i++) word += LETTERS[Math.floor(random() ** 2 * LETTERS.length)];
    words.add(word);
  }
  return [...words];
}

/** The tokenizer of the fleet: space-led words and runs of whitespace, one id each. */
export class FleetTokenizer {
  private readonly ids = new Map<string, number>();
  private readonly cache = new Map<string, number[]>();

  constructor(readonly words: readonly string[]) {
    words.forEach((word, index) => {
      this.ids.set(word, 1000 + index);
    });
  }

  idOf(piece: string): number {
    const known = this.ids.get(piece);
    if (known !== undefined) return known;
    // FNV-1a of an unknown piece into ids 50,000–149,999.
    let hash = 0x811c9dc5;
    for (let i = 0; i < piece.length; i++) hash = Math.imul(hash ^ piece.charCodeAt(i), 16777619);
    return 50_000 + ((hash >>> 0) % 100_000);
  }

  /** The ids of a message's content (cached: a history's earlier messages come back every turn). */
  encode(text: string): number[] {
    const cached = this.cache.get(text);
    if (cached) return cached;
    const pieces = text.match(/\s*\S+|\s+/g) ?? [];
    const ids = pieces.map((piece) => this.idOf(piece));
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(text, ids);
    return ids;
  }

  /** Qwen3's template: `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then `<|im_start|>assistant\n`. */
  prompt(messages: readonly { role?: unknown; content?: unknown }[]): number[] {
    const out: number[] = [];
    for (const message of messages) {
      out.push(IM_START, ROLE_IDS[String(message.role)] ?? 872, NEWLINE);
      const content = typeof message.content === 'string' ? message.content : '';
      for (const id of this.encode(content)) out.push(id);
      out.push(IM_END, NEWLINE);
    }
    out.push(IM_START, ROLE_IDS.assistant as number, NEWLINE);
    return out;
  }
}

/** The bytes vLLM lists for a token: its UTF-8 encoding. */
function bytesOf(piece: string): number[] {
  return [...Buffer.from(piece, 'utf8')];
}

/** The `"choices":[…]` member of a reply of `pieces` (and `<|im_end|>` unless cut by a length limit). */
function choicesJson(options: { reply: Omit<Reply, 'full'>; count: number; logprobs: boolean; tokenIds: boolean }): string {
  const { reply, count } = options;
  const stopped = count === reply.tokenIds.length;
  const content = stopped ? reply.content : reply.pieces.slice(0, count).join('');
  const message = {
    role: 'assistant',
    content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
    reasoning: null,
  };
  const entries = options.logprobs
    ? {
        content: reply.tokenIds.slice(0, count).map((_, i) => {
          const token = i < reply.pieces.length ? (reply.pieces[i] as string) : '<|im_end|>';
          return { token, logprob: reply.logprobs[i], bytes: bytesOf(token), top_logprobs: [] };
        }),
      }
    : null;
  const choice: Record<string, unknown> = {
    index: 0,
    message,
    logprobs: entries,
    finish_reason: stopped ? 'stop' : 'length',
    stop_reason: null,
    token_ids: options.tokenIds ? reply.tokenIds.slice(0, count) : null,
    routed_experts: null,
  };
  return `"choices":[${JSON.stringify(choice)}]`;
}

/** Builds one server's replies: log-normal lengths, words from the vocabulary, logprobs ≤ 0. */
function makeReplies(options: Required<VllmFleetOptions>, tokenizer: FleetTokenizer, random: () => number): Reply[] {
  const replies: Reply[] = [];
  for (let r = 0; r < options.replies; r++) {
    // Box–Muller normal for the log-length.
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const length = Math.round(
      Math.min(options.maxTokens, Math.max(options.minTokens, options.medianTokens * Math.exp(options.sigma * normal))),
    );
    const pieces: string[] = [];
    for (let i = 0; i < length - 1; i++)
      pieces.push(tokenizer.words[Math.floor(random() ** 1.5 * tokenizer.words.length)] as string);
    const tokenIds = [...pieces.map((piece) => tokenizer.idOf(piece)), IM_END];
    const logprobs = tokenIds.map(() => Math.log(1 - random() * 0.999));
    const base = { content: pieces.join(''), tokenIds, logprobs, pieces };
    const full = Buffer.from(choicesJson({ reply: base, count: tokenIds.length, logprobs: true, tokenIds: true }));
    replies.push({ ...base, full });
  }
  return replies;
}

/** What a server counts. */
export interface ServerTally {
  requests: number;
  completionTokens: number;
  refused: number;
}

/**
 * N vLLM-shaped servers on loopback (see the module header). `baseUrls` are `http://127.0.0.1:<port>/v1`.
 */
export class VllmFleet {
  readonly baseUrls: string[] = [];
  /** Totals over all servers since start (or the last {@link mark}). */
  readonly tally: ServerTally = { requests: 0, completionTokens: 0, refused: 0 };
  readonly tokenizer: FleetTokenizer;
  private readonly options: Required<VllmFleetOptions>;
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly replies: Reply[][] = [];
  private readonly inFlight: number[] = [];
  private readonly draws: (() => number)[] = [];
  private sequence = 0;

  private constructor(options: VllmFleetOptions) {
    this.options = {
      servers: options.servers ?? 8,
      model: options.model ?? 'policy',
      latencyMs: options.latencyMs ?? 20,
      tokensPerSecond: options.tokensPerSecond ?? 25_000,
      replies: options.replies ?? 64,
      medianTokens: options.medianTokens ?? 320,
      sigma: options.sigma ?? 0.7,
      minTokens: options.minTokens ?? 16,
      maxTokens: options.maxTokens ?? 2048,
      maxModelLen: options.maxModelLen ?? 32_768,
      seed: options.seed ?? 1,
    };
    const random = rng(this.options.seed);
    this.tokenizer = new FleetTokenizer(vocabulary(4096, random));
    for (let s = 0; s < this.options.servers; s++) {
      this.replies.push(makeReplies(this.options, this.tokenizer, random));
      this.inFlight.push(0);
      this.draws.push(rng(this.options.seed * 1000 + s));
    }
  }

  /** Starts the servers on loopback ports chosen by the OS. */
  static async start(options: VllmFleetOptions = {}): Promise<VllmFleet> {
    const fleet = new VllmFleet(options);
    for (let s = 0; s < fleet.options.servers; s++) {
      const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => fleet.handle(s, req, res));
      server.on('connection', (socket: Socket) => {
        socket.setNoDelay(true);
        fleet.sockets.add(socket);
        socket.on('close', () => fleet.sockets.delete(socket));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      fleet.servers.push(server);
      fleet.baseUrls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
    }
    return fleet;
  }

  /** Mean completion length of the pre-encoded replies, in tokens. */
  meanCompletionTokens(): number {
    const all = this.replies.flat();
    return all.reduce((sum, reply) => sum + reply.tokenIds.length, 0) / all.length;
  }

  /** The tally so far, and a fresh one from now on. */
  mark(): ServerTally {
    const out = { ...this.tally };
    this.tally.requests = 0;
    this.tally.completionTokens = 0;
    this.tally.refused = 0;
    return out;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }

  private handle(server: number, req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/';
    if (req.method === 'GET' && (path === '/liveness' || path === '/health')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      const card = { id: this.options.model, object: 'model', owned_by: 'vllm', root: this.options.model, parent: null };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [card] }));
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => this.complete(server, Buffer.concat(chunks), res));
  }

  private refuse(res: ServerResponse, status: number, type: string, message: string, param: string | null): void {
    this.tally.refused++;
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { message, type, param, code: status } }));
  }

  // Long: one request's checks in vLLM's order, then the reply's three parts.
  private complete(server: number, bytes: Buffer, res: ServerResponse): void {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error('not an object');
    } catch (error) {
      this.refuse(res, 400, 'BadRequestError', `invalid JSON body: ${(error as Error).message}`, null);
      return;
    }
    const model = body.model;
    if (typeof model === 'string' && model !== '' && model !== this.options.model) {
      this.refuse(res, 404, 'NotFoundError', `The model \`${model}\` does not exist.`, 'model');
      return;
    }
    if (!Array.isArray(body.messages)) {
      this.refuse(res, 400, 'BadRequestError', 'messages: Field required (a list)', 'messages');
      return;
    }
    const salt = body.cache_salt;
    if (salt !== undefined && salt !== null && (typeof salt !== 'string' || salt.length < 1 || salt.length > 1024)) {
      this.refuse(res, 400, 'BadRequestError', 'cache_salt: a string of 1 to 1024 characters', 'cache_salt');
      return;
    }
    const prompt = this.tokenizer.prompt(body.messages as { role?: unknown; content?: unknown }[]);
    const limit = (body.max_completion_tokens ?? body.max_tokens) as number | null | undefined;
    if (typeof limit === 'number' && prompt.length + limit > this.options.maxModelLen) {
      this.refuse(
        res,
        400,
        'BadRequestError',
        `This model's maximum context length is ${this.options.maxModelLen} tokens. However, you requested ${prompt.length + limit} tokens (${prompt.length} in the messages, ${limit} in the completion). Please reduce the length of the messages or completion.`,
        null,
      );
      return;
    }
    const pool = this.replies[server] as Reply[];
    // Sampled, as vLLM samples: a seeded draw per server, so calls made one at a time get the same replies.
    const reply = pool[Math.floor((this.draws[server] as () => number)() * pool.length)] as Reply;
    const budget = this.options.maxModelLen - prompt.length;
    const count = Math.max(0, Math.min(reply.tokenIds.length, typeof limit === 'number' ? limit : budget));
    const logprobs = body.logprobs === true;
    const tokenIds = body.return_token_ids === true;
    const choices =
      count === reply.tokenIds.length && logprobs && tokenIds
        ? reply.full
        : Buffer.from(choicesJson({ reply, count, logprobs, tokenIds }));
    const id = `chatcmpl-${(this.sequence++).toString(16).padStart(32, '0')}`;
    const head = Buffer.from(
      `{"id":"${id}","object":"chat.completion","created":${Math.floor(Date.now() / 1000)},"model":${JSON.stringify(this.options.model)},`,
    );
    const usage = {
      prompt_tokens: prompt.length,
      total_tokens: prompt.length + count,
      completion_tokens: count,
      prompt_tokens_details: null,
    };
    const tail = Buffer.from(
      `,"service_tier":null,"system_fingerprint":null,"usage":${JSON.stringify(usage)},"prompt_logprobs":null,"prompt_token_ids":${tokenIds ? `[${prompt.join(',')}]` : 'null'},"prompt_text":null,"kv_transfer_params":null}`,
    );
    this.inFlight[server]!++;
    const delay = this.options.latencyMs + (count * (this.inFlight[server] as number) * 1000) / this.options.tokensPerSecond;
    setTimeout(() => {
      this.inFlight[server]!--;
      this.tally.requests++;
      this.tally.completionTokens += count;
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': head.length + choices.length + tail.length,
      });
      res.cork();
      res.write(head);
      res.write(choices);
      res.end(tail);
    }, delay);
  }
}
