import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ProviderError } from '../errors/troupe-error.ts';
import type { DialectName, ParsedWireRequest, WireDialect } from '../interception/dialects/dialect.ts';
import { WireRequestError, wireId } from '../interception/dialects/dialect.ts';
import {
  estimateTokens,
  modelsBody,
  parseJsonBody,
  readBody,
  routeOf,
  SSE_HEADERS,
  secretOf,
  sendJson,
} from '../interception/http-wire.ts';
import type { AssistantMessage, ToolCall } from '../model/messages.ts';
import type { FinishReason, ModelRequest, ModelResponse, Usage } from '../model/model-client.ts';
import { OpenAICompatibleClient, type OpenAICompatibleClientOptions } from '../model/openai-client.ts';
import { type FaultKind, type FaultOptions, FaultPlan } from './fault-injection.ts';
import { scriptedCompletionTokens, scriptedLogprob, scriptedPromptTokens } from './scripted-tokens.ts';

/** One scripted answer. A plain string is shorthand for `{ content }`. */
export interface ScriptedReply {
  content?: string | null;
  toolCalls?: { id?: string; name: string; arguments: string | Record<string, unknown> }[];
  reasoning?: string;
  finishReason?: FinishReason;
  usage?: Usage;
  /** Exact token ids (and logprobs) to return, as vLLM would with `return_token_ids`. */
  tokens?: { prompt: number[]; completion: number[]; logprobs?: number[] };
  /** Answer with an HTTP error instead (e.g. `{ status: 429, headers: { 'retry-after': '0' } }`). */
  error?: { status: number; message?: string; headers?: Record<string, string> };
  /** Inject this fault into the request instead of answering. */
  fault?: FaultKind;
}

/** What a scripted function is told about the request. */
export interface ScriptContext {
  dialect: DialectName;
  /** 0-based index of this request among the requests that reached the script. */
  callIndex: number;
  headers: IncomingHttpHeaders;
  /** The raw JSON body as received. */
  body: unknown;
}

/**
 * Answers one request of the `ScriptedModelServer`: a `ScriptedReply`, or a string (a plain text
 * reply); may be async.
 */
export type ScriptFunction = (
  request: ModelRequest,
  context: ScriptContext,
) => ScriptedReply | string | Promise<ScriptedReply | string>;

/** Options of `ScriptedModelServer`. */
export interface ScriptedModelServerOptions {
  /** Replies consumed in order, or a function answering each request. */
  script: (ScriptedReply | string)[] | ScriptFunction;
  /** Port on 127.0.0.1 (default ephemeral). */
  port?: number;
  /** Model name reported when the request names none (default `scripted-model`). */
  model?: string;
  /** Generate deterministic vLLM token ids and logprobs (one token per word) when none are scripted. */
  vllmTokens?: boolean;
  /** Delay before each answer in milliseconds. */
  latencyMs?: number;
  /** Random fault injection. */
  faults?: FaultOptions;
  /** When set, requests must carry this key (Bearer or x-api-key), else 401. */
  apiKey?: string;
  /** Keep a log of every request (default true; turn off for benchmarks). */
  keepLog?: boolean;
}

/** One entry of the request log. */
export interface ScriptedRequestLog {
  dialect: DialectName | null;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** The request as the dialect translated it (absent when it could not be parsed). */
  request?: ModelRequest;
  /** Index among requests that reached the script. */
  callIndex?: number;
  fault?: FaultKind;
  status: number;
}

/**
 * A real model server on loopback for tests: speaks OpenAI chat, OpenAI responses and Anthropic
 * messages (streaming and not) with the same translators interception uses, answers from a script
 * or a function, and injects latency and faults (5xx, 429, resets, timeouts, truncated or
 * malformed bodies, cut streams).
 */
export class ScriptedModelServer {
  /** Every request received, in arrival order. */
  readonly requests: ScriptedRequestLog[] = [];
  private readonly options: ScriptedModelServerOptions;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly faults: FaultPlan | null;
  private callIndex = 0;
  private port = 0;

  constructor(options: ScriptedModelServerOptions) {
    this.options = options;
    this.faults = options.faults ? new FaultPlan(options.faults) : null;
    this.server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
      this.onRequest(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: `scripted server: ${(error as Error)?.message}` } });
        else if (!res.writableEnded) res.end();
      });
    });
    this.server.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts a server and waits until it listens. */
  static async start(options: ScriptedModelServerOptions): Promise<ScriptedModelServer> {
    const server = new ScriptedModelServer(options);
    await server.listen();
    return server;
  }

  /** Listens on 127.0.0.1. */
  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      // A deep accept queue: a burst of concurrent clients must not overflow it (overflow → ECONNRESET).
      this.server.listen({ port: this.options.port ?? 0, host: '127.0.0.1', backlog: 4096 }, () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** `http://127.0.0.1:PORT`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `http://127.0.0.1:PORT/v1`, the base URL for OpenAI-style clients. */
  get baseUrl(): string {
    return `${this.url}/v1`;
  }

  /** Number of requests that reached the script. */
  get calls(): number {
    return this.callIndex;
  }

  /** Stops the server, cutting held (timeout) requests. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  private log(entry: ScriptedRequestLog): void {
    if (this.options.keepLog !== false) this.requests.push(entry);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = routeOf(req.method, req.url);
    const dialect = route.dialect;
    const entry: ScriptedRequestLog = {
      dialect: route.kind === 'model-call' ? dialect.name : null,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: undefined,
      status: 200,
    };
    const fail = (status: number, message: string, headers: Record<string, string> = {}) => {
      entry.status = status;
      this.log(entry);
      sendJson(res, status, dialect.errorBody({ status, message }), headers);
    };
    if (this.options.apiKey !== undefined && secretOf(req) !== this.options.apiKey) {
      req.resume();
      return fail(401, 'invalid api key');
    }
    if (route.kind === 'not-found') {
      req.resume();
      return fail(404, `no route for ${req.method} ${req.url}`);
    }
    if (route.kind === 'models') {
      req.resume();
      this.log(entry);
      return sendJson(res, 200, modelsBody(this.options.model ?? 'scripted-model'));
    }
    let parsed: ParsedWireRequest;
    try {
      entry.body = parseJsonBody(await readBody(req, 64 * 1024 * 1024));
      if (route.kind === 'count-tokens') {
        this.log(entry);
        return sendJson(res, 200, { input_tokens: estimateTokens(entry.body) });
      }
      parsed = dialect.parseRequest(entry.body);
      entry.request = parsed.request;
    } catch (error) {
      const status = WireRequestError.isInstance(error) ? error.status : 400;
      return fail(status, (error as Error).message);
    }
    return this.answer({ req, res, dialect, parsed, entry, fail });
  }

  /**
   * Answers a parsed model call after the latency: a random fault, or the script's reply (an HTTP
   * error, a fault, or the response, streamed when asked).
   */
  private async answer(call: {
    req: IncomingMessage;
    res: ServerResponse;
    dialect: WireDialect;
    parsed: ParsedWireRequest;
    entry: ScriptedRequestLog;
    fail: (status: number, message: string, headers?: Record<string, string>) => void;
  }): Promise<void> {
    const { req, res, dialect, parsed, entry, fail } = call;
    if (this.options.latencyMs) await delay(this.options.latencyMs);
    const randomFault = this.faults?.next() ?? null;
    if (randomFault) {
      entry.fault = randomFault;
      this.log(entry);
      return this.injectFault(randomFault, req, res, dialect, parsed, entry);
    }
    const callIndex = this.callIndex++;
    entry.callIndex = callIndex;
    let reply: ScriptedReply;
    try {
      reply = await this.reply(parsed.request, { dialect: dialect.name, callIndex, headers: req.headers, body: entry.body });
    } catch (error) {
      return fail(400, `scripted model: ${(error as Error).message}`);
    }
    if (reply.error) {
      return fail(reply.error.status, reply.error.message ?? `scripted error ${reply.error.status}`, reply.error.headers);
    }
    if (reply.fault) {
      entry.fault = reply.fault;
      this.log(entry);
      return this.injectFault(reply.fault, req, res, dialect, parsed, entry);
    }
    const response = this.toResponse(reply, parsed.request);
    this.log(entry);
    if (parsed.stream) {
      res.writeHead(200, SSE_HEADERS);
      res.end(dialect.renderStream(response, parsed).join(''));
    } else {
      sendJson(res, 200, dialect.renderResponse(response, parsed));
    }
  }

  private async reply(request: ModelRequest, context: ScriptContext): Promise<ScriptedReply> {
    const script = this.options.script;
    let reply: ScriptedReply | string | undefined;
    if (typeof script === 'function') reply = await script(request, context);
    else {
      reply = script[context.callIndex];
      if (reply === undefined) throw new ProviderError(`script exhausted after ${script.length} replies`);
    }
    return typeof reply === 'string' ? { content: reply } : reply;
  }

  /** Builds the neutral response for a scripted reply (ids, usage, token ids). */
  private toResponse(reply: ScriptedReply, request: ModelRequest): ModelResponse {
    const toolCalls: ToolCall[] | undefined = reply.toolCalls?.map((call, i) => ({
      id: call.id ?? `call_${wireId('')}_${i}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const message: AssistantMessage = {
      role: 'assistant',
      content: reply.content === undefined ? (toolCalls?.length ? null : '') : reply.content,
    };
    if (toolCalls?.length) message.toolCalls = toolCalls;
    if (reply.reasoning) message.reasoning = reply.reasoning;
    const response: ModelResponse = {
      id: wireId('chatcmpl-'),
      model: request.model || (this.options.model ?? 'scripted-model'),
      message,
      finishReason: reply.finishReason ?? (toolCalls?.length ? 'tool_calls' : 'stop'),
      usage: { promptTokens: 0, completionTokens: 0 },
    };
    let tokens = reply.tokens;
    if (!tokens && this.options.vllmTokens) {
      tokens = { prompt: scriptedPromptTokens(request.messages), completion: scriptedCompletionTokens(message) };
    }
    if (tokens) {
      response.promptTokenIds = tokens.prompt;
      response.completionTokenIds = tokens.completion;
      response.completionLogprobs = tokens.logprobs ?? tokens.completion.map(scriptedLogprob);
    }
    response.usage = reply.usage ?? {
      promptTokens: tokens?.prompt.length ?? estimateTokens(request.messages),
      completionTokens: tokens?.completion.length ?? estimateTokens(`${message.content ?? ''}${JSON.stringify(toolCalls ?? '')}`),
    };
    return response;
  }

  private injectFault(
    fault: FaultKind,
    req: IncomingMessage,
    res: ServerResponse,
    dialect: WireDialect,
    parsed: ParsedWireRequest,
    entry: ScriptedRequestLog,
  ): void {
    const retryAfterMs = String(this.faults?.options.retryAfterMs ?? 10);
    const error = (status: number, headers: Record<string, string> = {}) => {
      entry.status = status;
      sendJson(res, status, dialect.errorBody({ status, message: `injected fault ${fault}` }), headers);
    };
    switch (fault) {
      case '500':
        error(500);
        return;
      case '503':
        error(503, { 'retry-after-ms': retryAfterMs });
        return;
      case '429':
        error(429, { 'retry-after-ms': retryAfterMs, 'retry-after': String(Math.ceil(Number(retryAfterMs) / 1000)) });
        return;
      case 'reset':
        entry.status = 0;
        req.socket.destroy();
        return;
      case 'timeout':
        // Never answers; the client times out, or close() cuts the connection.
        entry.status = 0;
        return;
      case 'malformed':
        entry.status = 200;
        if (parsed.stream) {
          res.writeHead(200, SSE_HEADERS);
          res.end('data: {"id": "broken", "choices": [\n\n');
        } else {
          const text = '{"id": "broken", "object": "chat.completion", "choices": [';
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          res.end(text);
        }
        return;
      case 'truncated':
      case 'stream_cut': {
        entry.status = 200;
        const response = this.toResponse({ content: 'this reply will be cut short by the scripted server' }, parsed.request);
        if (parsed.stream) {
          const frames = dialect.renderStream(response, parsed);
          res.writeHead(200, SSE_HEADERS);
          res.write(frames.slice(0, Math.max(1, Math.floor(frames.length / 2))).join(''));
        } else {
          const text = JSON.stringify(dialect.renderResponse(response, parsed));
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          res.write(text.slice(0, Math.floor(text.length / 2)));
        }
        setImmediate(() => req.socket.destroy());
        return;
      }
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A scripted server plus an `OpenAICompatibleClient` pointed at it. */
export interface ScriptedClient {
  client: OpenAICompatibleClient;
  server: ScriptedModelServer;
  close(): Promise<void>;
}

/**
 * Starts a scripted model server and returns an `OpenAICompatibleClient` for it (fast retries by
 * default, so fault tests stay quick).
 */
export async function scriptedClient(
  options: ScriptedModelServerOptions & { client?: Partial<OpenAICompatibleClientOptions> },
): Promise<ScriptedClient> {
  const { client: clientOptions, ...serverOptions } = options;
  const server = await ScriptedModelServer.start(serverOptions);
  const client = new OpenAICompatibleClient({
    baseUrl: server.baseUrl,
    apiKey: serverOptions.apiKey ?? 'sk-scripted',
    model: serverOptions.model ?? 'scripted-model',
    retry: { baseDelayMs: 5, maxDelayMs: 50 },
    ...clientOptions,
  });
  return { client, server, close: () => server.close() };
}
