// Test utilities of @troupe/prime-rl (`@troupe/prime-rl/testing`): a vLLM-shaped server on loopback
// for tests of what drives prime-rl's inference servers (weight updates, routing, sampling).
import { readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';

/**
 * A fault injected into one admin call: answer with that HTTP status, never answer (`hang`), or
 * destroy the connection (`reset`).
 */
export type AdminFault = { status: number } | 'hang' | 'reset';

/** One admin call the server received, in arrival order. */
export interface AdminCall {
  /** The admin route: `POST /pause`, `/update_weights`, `/resume` or `/load_lora_adapter`. */
  route: 'pause' | 'update_weights' | 'resume' | 'load_lora_adapter';
  /** The query string's parameters (`/pause?mode=keep` gives `{ mode: 'keep' }`). */
  query: Record<string, string>;
  /** The parsed JSON body (`update_weights` carries `{ weight_dir }`), `undefined` when empty. */
  body: unknown;
  /** What the server did: `ok`, `status <n>`, `hang`, `reset`. */
  outcome: string;
}

/** One chat request as it reached the model. */
export interface ChatCall {
  /** The request's `model` (the served name, or vLLM answers 404). */
  model: unknown;
  /** The request's `cache_salt` (prime-rl salts vLLM's prefix cache per policy version). */
  cacheSalt: unknown;
  /** The request's `return_token_ids`. */
  returnTokenIds: unknown;
  /** The request's `logprobs`. */
  logprobs: unknown;
  /** The request's `temperature`. */
  temperature: unknown;
  /** `weight_dir` the server held when it answered. */
  weightDir: string | null;
  /** The `lora_path` of the adapter the request named, when it named one. */
  loraPath?: string;
}

/**
 * A vLLM-shaped server on loopback for tests, standing in for vLLM where there is no GPU:
 * prime-rl's admin routes (`/pause`, `/update_weights`, `/resume`, `/liveness`) with scripted
 * faults, and `/v1/*` forwarded over real HTTP to a model server (`ScriptedModelServer` from
 * `@troupe/verifiers/testing`, with `vllmTokens` for vLLM's token ids and logprobs). It records
 * every admin call and the `weight_dir` it was given, and never opens that directory (vLLM reads
 * it, not the orchestrator). While paused it holds chat requests until `/resume` (vLLM's
 * `mode=keep`) and records order violations.
 *
 * ```ts
 * const model = await ScriptedModelServer.start({ vllmTokens: true, script: () => 'red' });
 * const vllm = await VllmShapedServer.start({ upstream: model.url });
 * // … point the run's `inference.base_urls` at vllm.baseUrl …
 * await vllm.close();
 * ```
 */
export class VllmShapedServer {
  /** Every admin call, in arrival order (faulted ones included, with their `outcome`). */
  readonly admin: AdminCall[] = [];
  /** Every chat request forwarded to the model, in arrival order. */
  readonly chat: ChatCall[] = [];
  /** Broken invariants: an update while not paused, a chat answered while paused … */
  readonly violations: string[] = [];
  /** Faults consumed in order per route. */
  readonly faults: Record<AdminCall['route'], AdminFault[]> = {
    pause: [],
    update_weights: [],
    resume: [],
    load_lora_adapter: [],
  };
  /** LoRA adapters loaded (name → `lora_path` of its last load); requests may name them as `model`. */
  readonly adapters = new Map<string, string>();
  /** Whether `/liveness` answers 200 (else 503); tests flip it to take a server out. */
  live = true;
  /** Requests refused because their `model` is not served (vLLM's 404), in arrival order: the names asked for. */
  readonly refusedModels: string[] = [];
  /** The name the server serves (vLLM `--served-model-name`, else the model path). */
  readonly servedModelName: string;
  /** Between a `/pause` and the next `/resume`. */
  paused = false;
  /** The `weight_dir` of the last successful `/update_weights`, `null` before any. */
  weightDir: string | null = null;
  private waiters: (() => void)[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly hung = new Set<ServerResponse>();
  private port = 0;
  private cwd = tmpdir();
  private checkWeightDir = true;
  private enableLora = false;
  private chatTemplate: 'qwen3' | null = null;
  private readonly vocabulary = new Map<string, number>();

  private constructor(
    private readonly upstream: string,
    servedModelName: string,
  ) {
    this.servedModelName = servedModelName;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /**
   * Starts on an ephemeral loopback port; `upstream` is the model server's root URL;
   * `servedModelName` the one name it serves (default `policy`, `[inference] model`'s default).
   */
  static async start(options: {
    upstream: string;
    servedModelName?: string;
    /**
     * The directory vLLM runs in (prime-rl's checkout), against which a relative `weight_dir` resolves;
     * default the system's temporary directory, never the test's working directory.
     */
    cwd?: string;
    /** Check that `weight_dir` holds safetensors, as vLLM's loader does (default true). */
    checkWeightDir?: boolean;
    /**
     * `qwen3`: token ids as vLLM gives them for a Qwen3 model, from its chat template (earlier
     * assistant turns re-rendered without their `<think>` block), not the model server's.
     */
    chatTemplate?: 'qwen3';
    /** vLLM's `--enable-lora` (prime-rl's `[vllm] enable_lora`): without it loading an adapter fails. */
    enableLora?: boolean;
  }): Promise<VllmShapedServer> {
    const server = new VllmShapedServer(options.upstream, options.servedModelName ?? 'policy');
    server.cwd = options.cwd ?? tmpdir();
    server.checkWeightDir = options.checkWeightDir ?? true;
    server.chatTemplate = options.chatTemplate ?? null;
    server.enableLora = options.enableLora ?? false;
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve));
    server.port = (server.server.address() as AddressInfo).port;
    return server;
  }

  /** `http://127.0.0.1:<port>`: where the admin routes are. */
  get root(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `<root>/v1`: the OpenAI-compatible base URL a client or `inference.base_urls` takes. */
  get baseUrl(): string {
    return `${this.root}/v1`;
  }

  /** Drops held and open connections and stops listening. */
  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Token ids of `text` in this server's vocabulary (one id per piece, assigned on first sight). */
  private tokenize(text: string): number[] {
    return templatePieces(text).map((piece) => {
      let id = this.vocabulary.get(piece);
      if (id === undefined) {
        id = 10 + this.vocabulary.size;
        this.vocabulary.set(piece, id);
      }
      return id;
    });
  }

  /**
   * The reply with vLLM's token fields as a Qwen3 model gives them: `prompt_token_ids` from the
   * rendered template, `choices[0].token_ids` the reply text then `<|im_end|>` (vLLM returns the
   * stop token it sampled), one logprob per completion token.
   */
  private withTemplateTokens(request: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
    const messages = (request.messages ?? []) as { role: string; content?: unknown }[];
    const choice = ((body.choices ?? []) as Record<string, unknown>[])[0] ?? {};
    const message = (choice.message ?? {}) as { content?: unknown };
    const prompt = this.tokenize(renderQwen3Chat(messages));
    const completion = [
      ...this.tokenize(typeof message.content === 'string' ? message.content : ''),
      ...this.tokenize('<|im_end|>'),
    ];
    const logprobs = completion.map((id, i) => -((id * 7 + i) % 13) / 16 - 0.0625);
    choice.token_ids = completion;
    choice.logprobs = {
      content: completion.map((id, i) => ({ token: `token_id:${id}`, logprob: logprobs[i], bytes: null, top_logprobs: [] })),
    };
    return {
      ...body,
      prompt_token_ids: prompt,
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: completion.length,
        total_tokens: prompt.length + completion.length,
      },
    };
  }

  /**
   * prime-rl's `POST /load_lora_adapter {lora_name, lora_path}` (`src/prime_rl/inference/vllm/
   * server.py:90-116` at 559b447: vLLM's loader with `load_inplace` forced, so a loaded name takes
   * the new path; `{"status": "ok"}`). vLLM's refusals (`vllm/entrypoints/openai/models/serving.py`
   * at 00153c8): a body without both fields is 422 (pydantic) or 400 when empty
   * (`_check_load_lora_adapter_request`); without `--enable-lora` the engine's `add_lora` raises
   * "LoRA is not enabled." (`vllm/v1/worker/lora_model_runner_mixin.py`, `add_lora`), answered 500
   * by `load_lora_adapter`; a `lora_path` with no `adapter_config.json` is vLLM's
   * `LoRAAdapterNotFoundError` (`vllm/exceptions.py`), answered 404. The directory is listed, never read.
   */
  private loadLoraAdapter(call: AdminCall, res: ServerResponse): void {
    const refusal = this.loraRefusal(call.body);
    if (refusal) {
      call.outcome = `status ${refusal.code}`;
      vllmError(res, refusal.code, refusal.type, refusal.message);
      return;
    }
    const { lora_name: name, lora_path: path } = call.body as { lora_name: string; lora_path: string };
    this.adapters.set(name, path);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
  }

  /** Why vLLM would refuse this `/load_lora_adapter` body (see {@link loadLoraAdapter}), or null. */
  private loraRefusal(value: unknown): { code: number; type: string; message: string } | null {
    const body = (value ?? {}) as { lora_name?: unknown; lora_path?: unknown };
    if (typeof body.lora_name !== 'string' || typeof body.lora_path !== 'string')
      return { code: 422, type: 'Bad Request', message: 'lora_name and lora_path: Field required (a string)' };
    if (!body.lora_name || !body.lora_path)
      return { code: 400, type: 'InvalidUserInput', message: "Both 'lora_name' and 'lora_path' must be provided." };
    if (!this.enableLora) return { code: 500, type: 'InternalServerError', message: 'LoRA is not enabled.' };
    if (!safeListing(resolve(this.cwd, body.lora_path)).includes('adapter_config.json'))
      return {
        code: 404,
        type: 'NotFoundError',
        message: `Loading lora ${body.lora_name} failed: No adapter found for ${body.lora_path}`,
      };
    return null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.root);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text ? JSON.parse(text) : undefined;
    if (url.pathname === '/liveness') {
      res.writeHead(this.live ? 200 : 503).end();
      return;
    }
    const route = (
      {
        '/pause': 'pause',
        '/update_weights': 'update_weights',
        '/resume': 'resume',
        '/load_lora_adapter': 'load_lora_adapter',
      } as const
    )[url.pathname];
    if (route && req.method === 'POST') {
      const fault = this.faults[route].shift();
      const call: AdminCall = { route, query: Object.fromEntries(url.searchParams), body, outcome: 'ok' };
      this.admin.push(call);
      if (fault === 'hang') {
        call.outcome = 'hang';
        this.hung.add(res);
        return;
      }
      if (fault === 'reset') {
        call.outcome = 'reset';
        req.socket.destroy();
        return;
      }
      if (fault) {
        call.outcome = `status ${fault.status}`;
        res.writeHead(fault.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'injected' }));
        return;
      }
      if (route === 'load_lora_adapter') return this.loadLoraAdapter(call, res);
      if (route === 'pause') this.paused = true;
      if (route === 'update_weights') {
        if (!this.paused) this.violations.push('update_weights while not paused');
        const weightDir = (body as { weight_dir?: string } | undefined)?.weight_dir ?? null;
        // prime-rl's route hands weight_dir to vLLM's DefaultModelLoader (`src/prime_rl/inference/
        // vllm/server.py:83-86`, `worker/filesystem.py:28-52` at 559b447), which resolves a relative
        // path against vLLM's own working directory and needs *.safetensors there; a failure is a 500.
        // The listing is read, never a file (the weights may be a pipe no one writes).
        const listing = weightDir === null ? [] : safeListing(resolve(this.cwd, weightDir));
        if (this.checkWeightDir && !listing.some((name) => name.endsWith('.safetensors'))) {
          call.outcome = 'status 500';
          this.violations.push(`update_weights: no safetensors in ${weightDir} (resolved from ${this.cwd})`);
          res
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify({ detail: `no weights in ${weightDir}` }));
          return;
        }
        this.weightDir = weightDir;
      }
      if (route === 'resume') {
        this.paused = false;
        for (const wake of this.waiters.splice(0)) wake();
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    if (url.pathname === '/v1/models' && req.method === 'GET') {
      // vLLM's ModelList of ModelCards (`vllm/entrypoints/openai/engine/protocol.py:86-99` at
      // d7e5252): one card per served name (`models/serving.py:60-72` at 00153c8).
      // Loaded adapters follow, parented to the base (`show_available_models`, `models/serving.py` at 00153c8).
      const card = { id: this.servedModelName, object: 'model', owned_by: 'vllm', root: this.servedModelName, parent: null };
      const adapters = [...this.adapters].map(([id, root]) => ({ id, object: 'model', owned_by: 'vllm', root, parent: card.id }));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [card, ...adapters] }));
      return;
    }
    if (url.pathname.startsWith('/v1/')) {
      // vLLM's model check (`vllm/entrypoints/openai/models/serving.py:49-58` at 00153c8): an
      // absent or empty name passes, a name it does not serve is a 404 NotFoundError with
      // param "model", in vLLM's ErrorResponse shape (`engine/protocol.py:60-68` at d7e5252). A
      // loaded LoRA adapter's name is served too (`OpenAIServingModels.lora_requests`, filled by
      // `load_lora_adapter`); one not loaded is the same 404.
      const asked = (body as { model?: unknown } | undefined)?.model;
      if (
        req.method === 'POST' &&
        typeof asked === 'string' &&
        asked !== '' &&
        asked !== this.servedModelName &&
        !this.adapters.has(asked)
      ) {
        this.refusedModels.push(asked);
        const error = { message: `The model \`${asked}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 };
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
        return;
      }
      if (this.paused && url.pathname === '/v1/chat/completions') await new Promise<void>((wake) => this.waiters.push(wake));
      const request = body as Record<string, unknown> | undefined;
      if (url.pathname === '/v1/chat/completions') {
        if (this.paused) this.violations.push('chat answered while paused');
        this.chat.push({
          model: request?.model,
          cacheSalt: request?.cache_salt,
          returnTokenIds: request?.return_token_ids,
          logprobs: request?.logprobs,
          temperature: request?.temperature,
          weightDir: this.weightDir,
          ...(typeof request?.model === 'string' && this.adapters.has(request.model)
            ? { loraPath: this.adapters.get(request.model) }
            : {}),
        });
      }
      const reply = await fetch(`${this.upstream}${url.pathname}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
        ...(text ? { body: text } : {}),
      });
      const bytes = Buffer.from(await reply.arrayBuffer());
      if (this.chatTemplate && url.pathname === '/v1/chat/completions' && reply.ok && request?.stream !== true) {
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(this.withTemplateTokens(request ?? {}, JSON.parse(bytes.toString('utf8')))));
        return;
      }
      res.writeHead(reply.status, { 'content-type': reply.headers.get('content-type') ?? 'application/json' });
      res.end(bytes);
      return;
    }
    res.writeHead(404).end();
  }
}

/** A JSON error reply in vLLM's ErrorResponse shape (`engine/protocol.py:60-68` at d7e5252). */
function vllmError(res: ServerResponse, code: number, type: string, message: string): void {
  res
    .writeHead(code, { 'content-type': 'application/json' })
    .end(JSON.stringify({ error: { message, type, param: null, code } }));
}

/**
 * Qwen3's chat template (the official one: huggingface.co/Qwen/Qwen3-8B, tokenizer_config.json
 * `chat_template` at 895c8d1, L230): `<|im_start|>{role}\n{content}<|im_end|>\n` per message; an
 * assistant message before the last user query is rendered with `content.split('</think>')[-1]
 * .lstrip('\n')` — its reasoning dropped —, one after it with its `<think>` block; then the
 * generation prompt `<|im_start|>assistant\n`.
 */
export function renderQwen3Chat(messages: readonly { role: string; content?: unknown }[]): string {
  let lastQuery = -1;
  messages.forEach((message, index) => {
    if (message.role === 'user') lastQuery = index;
  });
  let text = '';
  messages.forEach((message, index) => {
    let content = typeof message.content === 'string' ? message.content : '';
    if (message.role === 'assistant' && index < lastQuery && content.includes('</think>'))
      content = (content.split('</think>').at(-1) as string).replace(/^\n+/, '');
    text += `<|im_start|>${message.role}\n${content}<|im_end|>\n`;
  });
  return `${text}<|im_start|>assistant\n`;
}

/** Pieces of a rendered chat as one token each: the special tokens, runs of whitespace, words. */
function templatePieces(text: string): string[] {
  return text.match(/<\|im_start\|>|<\|im_end\|>|<\/?think>|\s+|[^\s<]+|</g) ?? [];
}

/** The names in `dir`, or none when it is not a readable directory. */
function safeListing(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
