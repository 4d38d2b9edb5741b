// Test utilities of @troupe/prime-rl (`@troupe/prime-rl/testing`): a vLLM-shaped server on loopback
// for tests of what drives prime-rl's inference servers (weight updates, routing, sampling).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fault injected into one admin call: answer with that HTTP status, never answer (`hang`), or
 * destroy the connection (`reset`).
 */
export type AdminFault = { status: number } | 'hang' | 'reset';

/** One admin call the server received, in arrival order. */
export interface AdminCall {
  /** The admin route: `POST /pause`, `/update_weights` or `/resume`. */
  route: 'pause' | 'update_weights' | 'resume';
  /** The query string's parameters (`/pause?mode=keep` gives `{ mode: 'keep' }`). */
  query: Record<string, string>;
  /** The parsed JSON body (`update_weights` carries `{ weight_dir }`), `undefined` when empty. */
  body: unknown;
  /** What the server did: `ok`, `status <n>`, `hang`, `reset`. */
  outcome: string;
}

/** One chat request as it reached the model. */
export interface ChatCall {
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
  readonly faults: Record<AdminCall['route'], AdminFault[]> = { pause: [], update_weights: [], resume: [] };
  /** Whether `/liveness` answers 200 (else 503); tests flip it to take a server out. */
  live = true;
  /** Between a `/pause` and the next `/resume`. */
  paused = false;
  /** The `weight_dir` of the last successful `/update_weights`, `null` before any. */
  weightDir: string | null = null;
  private waiters: (() => void)[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly hung = new Set<ServerResponse>();
  private port = 0;

  private constructor(private readonly upstream: string) {
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

  /** Starts on an ephemeral loopback port; `upstream` is the model server's root URL. */
  static async start(options: { upstream: string }): Promise<VllmShapedServer> {
    const server = new VllmShapedServer(options.upstream);
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
    const route = ({ '/pause': 'pause', '/update_weights': 'update_weights', '/resume': 'resume' } as const)[url.pathname];
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
      if (route === 'pause') this.paused = true;
      if (route === 'update_weights') {
        if (!this.paused) this.violations.push('update_weights while not paused');
        this.weightDir = (body as { weight_dir?: string } | undefined)?.weight_dir ?? null;
      }
      if (route === 'resume') {
        this.paused = false;
        for (const wake of this.waiters.splice(0)) wake();
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    if (url.pathname.startsWith('/v1/')) {
      if (this.paused && url.pathname === '/v1/chat/completions') await new Promise<void>((wake) => this.waiters.push(wake));
      const request = body as Record<string, unknown> | undefined;
      if (url.pathname === '/v1/chat/completions') {
        if (this.paused) this.violations.push('chat answered while paused');
        this.chat.push({
          cacheSalt: request?.cache_salt,
          returnTokenIds: request?.return_token_ids,
          logprobs: request?.logprobs,
          temperature: request?.temperature,
          weightDir: this.weightDir,
        });
      }
      const reply = await fetch(`${this.upstream}${url.pathname}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
        ...(text ? { body: text } : {}),
      });
      res.writeHead(reply.status, { 'content-type': reply.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await reply.arrayBuffer()));
      return;
    }
    res.writeHead(404).end();
  }
}
