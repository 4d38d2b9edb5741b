import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { InterceptionError, TroupeError } from '../errors/troupe-error.ts';
import type { ModelResponse } from '../model/model-client.ts';
import { turnBudget } from '../util/turn-budget.ts';
import { ByteBudget } from './byte-budget.ts';
import { CallerBinding } from './caller-binding.ts';
import { CALLER_BINDING_SUPPORTED, type CallerProcessFinder, procCallerFinder } from './caller-process.ts';
import type { ParsedWireRequest, WireDialect, WireErrorInput } from './dialects/dialect.ts';
import { WireRequestError } from './dialects/dialect.ts';
import { estimateTokens, modelsBody, parseJsonBody, readBody, routeOf, SSE_HEADERS, secretOf, sendJson } from './http-wire.ts';
import type { RolloutSession } from './rollout-session.ts';

/** Options of `InterceptionServer`. */
export interface InterceptionServerOptions {
  /** Port on 127.0.0.1; 0 / undefined = an ephemeral port. */
  port?: number;
  /** Log lines (errors, refusals); never called on the happy path. */
  log?: (line: string) => void;
  /** Largest accepted request body in bytes (default 32 MiB); larger bodies get 413. */
  maxBodyBytes?: number;
  /**
   * A streaming request whose model call takes longer than this starts its SSE reply early and
   * sends the dialect's keep-alive frame at this interval, so programs with idle timeouts wait
   * (default 5000 ms; 0 disables).
   */
  heartbeatMs?: number;
  /** How many unregistered secrets are remembered to answer 409 rather than 401 (default 4096). */
  tombstones?: number;
  /**
   * Request bodies the whole process reads and parses at once, in bytes (default 256 MiB): a
   * request that does not fit waits, unread, until earlier ones are parsed (back-pressure; its
   * bytes stay in the socket). A body without a declared length reserves `maxBodyBytes`.
   */
  maxBodyBytesInFlight?: number;
  /**
   * How the process behind a connection is found, for sessions that bind their secret to their
   * first caller (`bindCaller`): default `/proc` on Linux; null (or another platform) enforces no
   * binding.
   */
  callerFinder?: CallerProcessFinder | null;
}

/** The default of {@link InterceptionServerOptions.maxBodyBytesInFlight}: 256 MiB. */
export const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT = 256 * 1024 * 1024;

const NO_RETRY = { 'x-should-retry': 'false' };

/**
 * The loopback HTTP server programs talk to instead of a model provider. Each rollout registers
 * its `RolloutSession`; the program gets `${url}/v1` as base URL and the session secret as key.
 * Speaks OpenAI chat, OpenAI responses and Anthropic messages (streaming and not), translating
 * each into a `ModelRequest` handled (imposed, limited, recorded) by the session.
 */
export class InterceptionServer {
  private readonly options: InterceptionServerOptions;
  private readonly server: Server;
  private readonly sessions = new Map<string, RolloutSession>();
  private readonly ended = new Set<string>();
  private readonly sockets = new Set<Socket>();
  private readonly abort = new AbortController();
  private readonly maxBodyBytes: number;
  private readonly heartbeatMs: number;
  private readonly bodies: ByteBudget;
  private readonly callerFinder: CallerProcessFinder | null;
  /** Per session that binds its caller, the process its secret is bound to. */
  private readonly bindings = new WeakMap<RolloutSession, CallerBinding>();
  /** Per connection, the session whose caller binding it passed. */
  private readonly callerChecked = new WeakMap<Socket, RolloutSession>();
  private port = 0;

  constructor(options: InterceptionServerOptions = {}) {
    this.options = options;
    this.maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.bodies = new ByteBudget(options.maxBodyBytesInFlight ?? DEFAULT_MAX_BODY_BYTES_IN_FLIGHT);
    this.callerFinder =
      options.callerFinder !== undefined ? options.callerFinder : CALLER_BINDING_SUPPORTED ? procCallerFinder() : null;
    // Every call in flight listens on this one signal (each removes its listener when it ends):
    // hundreds at once by design, not a leak, so Node's 10-listener warning is off for it.
    setMaxListeners(0, this.abort.signal);
    this.server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
      this.onRequest(req, res).catch((error: unknown) => {
        this.options.log?.(`interception: unhandled ${(error as Error)?.stack ?? String(error)}`);
        if (!res.headersSent) sendJson(res, 500, { error: { message: 'internal error', type: 'server_error' } });
        else if (!res.writableEnded) res.end();
      });
    });
    this.server.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('clientError', (_error, socket: Socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
  }

  /** Starts listening on 127.0.0.1 (only). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, '127.0.0.1', 4096, () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** `http://127.0.0.1:PORT` (after `start`). */
  get url(): string {
    if (!this.port) throw new InterceptionError('InterceptionServer: call start() before reading url');
    return `http://127.0.0.1:${this.port}`;
  }

  /** Registers a rollout; the program uses `baseUrl` with `session.secret` as its key. */
  register(session: RolloutSession): { baseUrl: string } {
    const key = keyOf(session.secret);
    this.ended.delete(key);
    this.sessions.set(key, session);
    return { baseUrl: `${this.url}/v1` };
  }

  /** Removes a rollout; later requests with its secret get 409. */
  unregister(session: RolloutSession): void {
    const key = keyOf(session.secret);
    if (this.sessions.get(key) !== session) return;
    this.sessions.delete(key);
    this.ended.add(key);
    const limit = this.options.tombstones ?? 4096;
    while (this.ended.size > limit) {
      const oldest = this.ended.values().next().value;
      if (oldest === undefined) break;
      this.ended.delete(oldest);
    }
  }

  /**
   * The process-wide budget of request bodies being read and parsed: its capacity, the bytes
   * reserved now and at most so far, and the requests waiting for room.
   */
  get bodyBudget(): { capacity: number; inUse: number; peak: number; waiting: number } {
    const { capacity, inUse, peak, queued } = this.bodies;
    return { capacity, inUse, peak, waiting: queued };
  }

  /** Number of registered rollouts. */
  get size(): number {
    return this.sessions.size;
  }

  /** Stops listening, aborts calls in flight and closes every connection. */
  async close(): Promise<void> {
    this.abort.abort(new InterceptionError('interception server closed'));
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  /**
   * The session of `secret`, as sent on `socket`. A program sends the same secret on its
   * keep-alive connection call after call: the socket remembers the last secret that matched a
   * session, and a request repeating it skips the hash and the constant-time comparison (the
   * string comparison only ever meets a secret that this same connection already proved).
   */
  private lookup(secret: string, socket: Socket): RolloutSession | 'ended' | null {
    const known = this.proven.get(socket);
    if (known !== undefined && known.secret === secret && this.sessions.get(known.key) === known.session) return known.session;
    const key = keyOf(secret);
    const session = this.sessions.get(key);
    if (session?.matches(secret)) {
      this.proven.set(socket, { secret, key, session });
      return session;
    }
    return this.ended.has(key) ? 'ended' : null;
  }

  /**
   * Whether the connection `socket` may call for `session`, whose secret is bound to the process
   * of its first call (see {@link CallerBinding}): null when it may (remembered for the
   * connection), else why not.
   */
  private async checkCaller(session: RolloutSession, socket: Socket): Promise<string | null> {
    let binding = this.bindings.get(session);
    if (!binding) {
      binding = new CallerBinding(this.callerFinder as CallerProcessFinder);
      this.bindings.set(session, binding);
    }
    const refusal = await binding.check(socket);
    // A first caller this host may not read (another user's process): the binding is not enforced.
    if (binding.caller === 'unknown') session.trace.metrics['calls/caller_unknown'] = 1;
    if (refusal === null) this.callerChecked.set(socket, session);
    else this.options.log?.(`interception: 403 ${refusal}`);
    return refusal;
  }

  /**
   * Whether the call on `req` comes from a process the session's secret is not bound to (see
   * {@link CallerBinding}): then it is answered 403 and recorded on the session's trace.
   */
  private async refusedCaller(call: {
    session: RolloutSession;
    req: IncomingMessage;
    res: ServerResponse;
    dialect: WireDialect;
  }): Promise<boolean> {
    if (!this.callerFinder || this.callerChecked.get(call.req.socket) === call.session) return false;
    const refusal = await this.checkCaller(call.session, call.req.socket);
    if (refusal === null) return false;
    call.session.refused(call.dialect.name, new InterceptionError(refusal, { statusCode: 403 }));
    call.req.resume();
    this.fail(call.res, call.dialect, { status: 403, message: refusal }, true);
    return true;
  }

  /** Per connection, the last secret that matched a session (see `lookup`). */
  private readonly proven = new WeakMap<Socket, { secret: string; key: string; session: RolloutSession }>();

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = routeOf(req.method, req.url);
    const dialect = route.dialect;
    if (route.kind === 'not-found') {
      req.resume();
      return this.fail(res, dialect, { status: 404, message: `no route for ${req.method} ${req.url}` });
    }
    const secret = secretOf(req);
    const session = secret ? this.lookup(secret, req.socket) : null;
    if (session === null) {
      req.resume();
      return this.fail(res, dialect, { status: 401, message: 'unknown or missing rollout secret' });
    }
    if (session === 'ended' || session.concluded) {
      // A call after the rollout ended (its program exited): refused and put on its trace.
      if (session !== 'ended') session.refused(dialect.name);
      req.resume();
      return this.fail(res, dialect, { status: 409, message: 'this rollout has ended' });
    }
    if (session.bindsCaller && (await this.refusedCaller({ session, req, res, dialect }))) return;
    if (route.kind === 'models') {
      req.resume();
      return sendJson(res, 200, modelsBody(session.model));
    }
    const declared = declaredLength(req);
    if (declared !== null && declared <= this.maxBodyBytes && route.kind === 'model-call' && declared > session.bytesLeft) {
      // Cannot fit what is left of the rollout's byte budget: refused unread (the limit stops the trace).
      req.resume();
      return this.fail(res, dialect, wireErrorOf(session.refuseBytes(declared)), true);
    }
    let parsed: ParsedWireRequest;
    let bodyBytes = 0;
    // The body's share of the process-wide budget, held while it is read and parsed.
    const reserved = this.bodies.clamp(declared !== null && declared <= this.maxBodyBytes ? declared : this.maxBodyBytes);
    let taken = this.bodies.tryTake(reserved);
    try {
      if (!taken) taken = await this.waitForBodyBudget(reserved, res);
      const raw = await readBody(req, this.maxBodyBytes);
      bodyBytes = raw.length;
      // Requests land in bursts: past this turn's share of work, parsing waits for a later turn
      // (see TurnBudget); with budget left it goes on at once (no await of undefined).
      const turn = turnBudget.pass();
      if (turn) await turn;
      const body = parseJsonBody(raw);
      if (route.kind === 'count-tokens') {
        const b = (body ?? {}) as Record<string, unknown>;
        return sendJson(res, 200, { input_tokens: estimateTokens([b.system, b.messages, b.tools], raw.length) });
      }
      parsed = dialect.parseRequest(body);
    } catch (error) {
      return this.fail(res, dialect, wireErrorOf(error), WireRequestError.isInstance(error) && error.status === 413);
    } finally {
      if (taken) this.bodies.release(reserved);
    }
    const retryCount = Number(req.headers['x-stainless-retry-count'] ?? 0) || 0;
    const meta = { dialect: dialect.name, retryCount, signal: this.abort.signal, bodyBytes };
    if (parsed.stream) return this.stream(res, dialect, parsed, session.handle(parsed.request, meta));
    return this.answer(res, dialect, parsed, session.handle(parsed.request, meta));
  }

  /** Answers a non-streaming call with its reply, or with the wire error it failed with. */
  private async answer(
    res: ServerResponse,
    dialect: WireDialect,
    parsed: ParsedWireRequest,
    call: Promise<ModelResponse>,
  ): Promise<void> {
    let response: ModelResponse;
    try {
      response = await call;
    } catch (error) {
      return this.fail(res, dialect, wireErrorOf(error));
    }
    // Replies land in bursts too (the model answers a burst of calls together).
    const turn = turnBudget.pass();
    if (turn) await turn;
    return sendJson(res, 200, dialect.renderResponse(response, parsed));
  }

  /** Streams a reply; if the call is slow, commits the SSE reply early and keeps it alive. */
  private async stream(
    res: ServerResponse,
    dialect: WireDialect,
    parsed: ParsedWireRequest,
    call: Promise<ModelResponse>,
  ): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let first = true;
    if (this.heartbeatMs > 0) {
      timer = setInterval(() => {
        if (res.destroyed) return;
        if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
        res.write(dialect.heartbeat(first, parsed));
        first = false;
      }, this.heartbeatMs);
    }
    let response: ModelResponse;
    try {
      response = await call;
    } catch (error) {
      if (timer) clearInterval(timer);
      const wire = wireErrorOf(error);
      if (!res.headersSent) return this.fail(res, dialect, wire);
      this.options.log?.(`interception: ${dialect.name} stream failed after start: ${wire.status} ${wire.message}`);
      if (!res.destroyed) res.end(dialect.streamError(wire));
      return;
    }
    if (timer) clearInterval(timer);
    const turn = turnBudget.pass();
    if (turn) await turn;
    if (res.destroyed) return;
    if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
    res.end(dialect.renderStream(response, parsed).join(''));
  }

  /** Waits for `amount` of the process-wide body budget; gives up (rejects) when the client goes away first. */
  private async waitForBodyBudget(amount: number, res: ServerResponse): Promise<true> {
    // Waiting is the slow path (the budget is full): an abort controller only then.
    const gone = new AbortController();
    const onClose = () => gone.abort(new WireRequestError('the client went away while its body waited', { status: 499 }));
    res.once('close', onClose);
    try {
      await this.bodies.wait(amount, gone.signal);
      return true;
    } finally {
      res.off('close', onClose);
    }
  }

  private fail(res: ServerResponse, dialect: WireDialect, error: WireErrorInput, close = false): void {
    const noRetry =
      error.status === 400 || error.status === 401 || error.status === 403 || error.status === 409 || error.status === 413;
    if (error.status >= 500 || error.status === 409) this.options.log?.(`interception: ${error.status} ${error.message}`);
    const headers: Record<string, string> = noRetry ? { ...NO_RETRY } : {};
    if (close) headers.connection = 'close';
    sendJson(res, error.status, dialect.errorBody(error), headers);
  }
}

/** The request's `content-length`, or null when it sent none (chunked) or an unreadable one. */
function declaredLength(req: IncomingMessage): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return null;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : null;
}

function keyOf(secret: string): string {
  return createHash('sha256').update(secret).digest('base64');
}

/**
 * An interception server started on first need: `get()` starts it once (concurrent first callers
 * share that one start) and `close()` closes it when it was ever asked for.
 */
export function lazyInterceptionServer(): { get: () => Promise<InterceptionServer>; close: () => Promise<void> } {
  let server: InterceptionServer | undefined;
  let started: Promise<InterceptionServer> | undefined;
  return {
    get: () =>
      (started ??= (async () => {
        server = new InterceptionServer();
        await server.start();
        return server;
      })()),
    close: async () => {
      await server?.close();
    },
  };
}

/** Maps anything thrown while serving a call to a wire error (status + message). */
export function wireErrorOf(error: unknown): WireErrorInput {
  if (WireRequestError.isInstance(error)) return { status: error.status, message: error.message, param: error.param };
  if (TroupeError.isInstance(error)) {
    switch (error.name) {
      case 'LimitError':
        return { status: 400, message: error.message };
      case 'RolloutConcludedError':
        return { status: 409, message: error.message };
      default: {
        const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 502;
        return { status, message: error.message };
      }
    }
  }
  return { status: 500, message: `internal error: ${(error as Error)?.message ?? String(error)}` };
}
