import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One admin call the double received, in arrival order. */
export interface VllmAdminCall {
  route: 'pause' | 'update_weights' | 'resume';
  query: Record<string, string>;
  /** `weight_dir` of an `update_weights` call. */
  weightDir?: string;
}

/**
 * A vLLM-shaped server on loopback, standing in for vLLM (no GPU here): prime-rl's admin routes
 * (`/pause`, `/update_weights`, `/resume`, `/liveness`), recording every call and the
 * `weight_dir` it was given — it never opens that directory, as vLLM reads it, not the
 * orchestrator — and `/v1/*` forwarded over HTTP to a model server that answers with vLLM's
 * token ids and logprobs (`ScriptedModelServer` with `vllmTokens`). While paused it holds chat
 * requests until `/resume` (`mode=keep`) and records broken invariants.
 */
export class VllmDouble {
  readonly admin: VllmAdminCall[] = [];
  /** Per chat request: `cache_salt`, and whether it asked for token ids and logprobs. */
  readonly chat: { cacheSalt: unknown; returnTokenIds: unknown; logprobs: unknown; weightDir: string | null }[] = [];
  readonly violations: string[] = [];
  paused = false;
  weightDir: string | null = null;
  private waiters: (() => void)[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
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
  static async start(options: { upstream: string }): Promise<VllmDouble> {
    const double = new VllmDouble(options.upstream);
    await new Promise<void>((resolve) => double.server.listen(0, '127.0.0.1', resolve));
    double.port = (double.server.address() as AddressInfo).port;
    return double;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = (text ? JSON.parse(text) : undefined) as Record<string, unknown> | undefined;
    if (url.pathname === '/liveness') {
      res.writeHead(200).end();
      return;
    }
    const route = ({ '/pause': 'pause', '/update_weights': 'update_weights', '/resume': 'resume' } as const)[url.pathname];
    if (route && req.method === 'POST') {
      const call: VllmAdminCall = { route, query: Object.fromEntries(url.searchParams) };
      if (route === 'pause') this.paused = true;
      if (route === 'update_weights') {
        if (!this.paused) this.violations.push('update_weights while not paused');
        call.weightDir = String(body?.weight_dir);
        this.weightDir = call.weightDir;
      }
      if (route === 'resume') {
        this.paused = false;
        for (const wake of this.waiters.splice(0)) wake();
      }
      this.admin.push(call);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    if (url.pathname.startsWith('/v1/')) {
      if (url.pathname === '/v1/chat/completions') {
        if (this.paused) await new Promise<void>((wake) => this.waiters.push(wake));
        this.chat.push({
          cacheSalt: body?.cache_salt,
          returnTokenIds: body?.return_token_ids,
          logprobs: body?.logprobs,
          weightDir: this.weightDir,
        });
      }
      const reply = await fetch(`${this.upstream}${url.pathname}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json' },
        ...(text ? { body: text } : {}),
      });
      res.writeHead(reply.status, { 'content-type': reply.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await reply.arrayBuffer()));
      return;
    }
    res.writeHead(404).end();
  }
}
