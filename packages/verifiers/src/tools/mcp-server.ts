import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';
import { WireRequestError } from '../interception/dialects/dialect.ts';
import { parseJsonBody, readBody } from '../interception/http-wire.ts';

// The MCP SDK is loaded when tools are first served, so importing `@troupe/verifiers` stays light.
type McpModules = {
  McpServer: typeof import('@modelcontextprotocol/sdk/server/mcp.js').McpServer;
  StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
};
let mcpModules: Promise<McpModules> | undefined;
function loadMcp(): Promise<McpModules> {
  mcpModules ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
  ]).then(([mcp, http]) => ({ McpServer: mcp.McpServer, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport }));
  return mcpModules;
}

/** A tool a taskset or env declares: a zod object input schema and a handler returning text. */
export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly description: string;
  readonly input: S;
  readonly handler: (args: z.infer<S>) => Promise<string> | string;
}

/** One served tool call, as recorded for the trace. */
export interface ToolCallRecord {
  readonly name: string;
  readonly args: unknown;
  readonly result: string;
  readonly isError: boolean;
}

/** Declares a tool (identity helper that keeps the handler's argument type). */
export function defineTool<S extends z.ZodObject>(tool: ToolDefinition<S>): ToolDefinition<S> {
  return tool;
}

/** The answer to a call whose record does not fit in the rollout's byte budget. */
const OVER_BUDGET = {
  content: [{ type: 'text' as const, text: 'rollout stopped: max_trace_bytes (this call would pass the byte budget)' }],
  isError: true,
};

function buildServer(modules: McpModules, tools: readonly ToolDefinition[], onCall: (r: ToolCallRecord) => boolean): McpServer {
  const server = new modules.McpServer({ name: 'troupe-tools', version: '0.0.0' });
  for (const tool of tools) {
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.input.shape }, async (args: unknown) => {
      try {
        const result = await tool.handler(args as never);
        if (!onCall({ name: tool.name, args, result, isError: false })) return OVER_BUDGET;
        return { content: [{ type: 'text' as const, text: result }] };
      } catch (err) {
        const result = err instanceof Error ? err.message : String(err);
        if (!onCall({ name: tool.name, args, result, isError: true })) return OVER_BUDGET;
        return { content: [{ type: 'text' as const, text: result }], isError: true };
      }
    });
  }
  return server;
}

/** A running loopback MCP endpoint. */
export interface ServedTools {
  /**
   * Streamable-HTTP URL with the key in its path, e.g. `http://127.0.0.1:PORT/mcp/<key>`: what a
   * harness is given (any MCP client can use it as is).
   */
  readonly url: string;
  /** Every tool call served so far, with its result. */
  readonly calls: readonly ToolCallRecord[];
  close(): Promise<void>;
}

/** Options of {@link serveToolsHttp}. */
export interface ServeToolsOptions {
  /** Called with each call served and its result (after `charge` accepted it). */
  onCall?: (r: ToolCallRecord) => void;
  /**
   * The key a request must present: in the URL path (`/mcp/<key>`, as `url` gives it) or as
   * `Authorization: Bearer <key>`. Default: a fresh random key. A rollout passes its own secret.
   */
  key?: string;
  /**
   * Charges the bytes a call's record adds to the trace; false refuses the call's record (the
   * program gets an error result, nothing is recorded). A rollout passes its byte budget.
   */
  charge?: (bytes: number) => boolean;
  /** Largest request body in bytes (default 4 MiB); larger ones get 413. */
  maxBodyBytes?: number;
}

/**
 * Serves `tools` over MCP streamable HTTP (stateless) on 127.0.0.1, for harnesses that declare
 * `supportsMcp`. Like interception, every request must present the key and name a loopback Host
 * (and, when a browser sends one, a loopback Origin): another local process, or a web page
 * through DNS rebinding, gets 401 / 403 and reaches no tool. Each call and its result is kept in
 * `calls` and passed to `onCall`.
 */
export async function serveToolsHttp(tools: readonly ToolDefinition[], opts: ServeToolsOptions = {}): Promise<ServedTools> {
  const modules = await loadMcp();
  const key = opts.key ?? `mcp-${randomBytes(24).toString('base64url')}`;
  const maxBodyBytes = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  const calls: ToolCallRecord[] = [];
  const record = (r: ToolCallRecord): boolean => {
    if (opts.charge && !opts.charge(recordBytes(r))) return false;
    calls.push(r);
    opts.onCall?.(r);
    return true;
  };
  let port = 0;
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const refusal = refuseRequest(req, key, port);
    if (refusal) {
      req.resume();
      res.writeHead(refusal.status, { 'content-type': 'text/plain', connection: 'close' }).end(refusal.message);
      return;
    }
    void serveMcp({ modules, tools, record, req, res, maxBodyBytes });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp/${key}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** Reads one request's body (bounded) and hands it to a fresh stateless MCP server. */
async function serveMcp(options: {
  modules: McpModules;
  tools: readonly ToolDefinition[];
  record: (r: ToolCallRecord) => boolean;
  req: IncomingMessage;
  res: ServerResponse;
  maxBodyBytes: number;
}): Promise<void> {
  const { modules, tools, record, req, res } = options;
  let body: unknown;
  if (req.method === 'POST') {
    try {
      body = parseJsonBody(await readBody(req, options.maxBodyBytes));
    } catch (error) {
      const status = WireRequestError.isInstance(error) ? error.status : 400;
      if (!res.headersSent)
        res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end((error as Error).message);
      return;
    }
  }
  const server = buildServer(modules, tools, record);
  const transport = new modules.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
}

/**
 * Why a request to the tool server at `port` is refused, or null: a path other than `/mcp/<key>`
 * (or `/mcp` with `Authorization: Bearer <key>`), a Host that is not this loopback port, or an
 * Origin that is not a loopback page.
 */
function refuseRequest(req: IncomingMessage, key: string, port: number): { status: number; message: string } | null {
  const path = (req.url ?? '/').split('?')[0] as string;
  if (path !== '/mcp' && !path.startsWith('/mcp/')) return { status: 404, message: 'not found' };
  if (!loopbackAuthority(req.headers.host, port)) return { status: 403, message: 'Host is not this loopback server' };
  const origin = req.headers.origin;
  if (origin !== undefined && !loopbackOrigin(origin)) return { status: 403, message: 'Origin is not a loopback page' };
  const presented = path.startsWith('/mcp/') ? path.slice('/mcp/'.length) : bearerOf(req.headers.authorization);
  if (presented === null || !sameSecret(presented, key)) return { status: 401, message: 'unknown or missing key' };
  return null;
}

/** Whether `host` (a Host header) names 127.0.0.1, localhost or [::1] at `port`. */
function loopbackAuthority(host: string | undefined, port: number): boolean {
  if (!host) return false;
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

/** Whether `origin` is an http(s) page on a loopback host (a browser on this machine's own pages). */
function loopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  } catch {
    return false;
  }
}

function bearerOf(header: string | undefined): string | null {
  return header && header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ' ? header.slice(7).trim() : null;
}

/** Constant-time comparison of two secrets. */
function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What a call's record adds to a trace, in bytes (its JSON, or the largest body when that fails). */
function recordBytes(r: ToolCallRecord): number {
  try {
    return JSON.stringify(r).length;
  } catch {
    return 4 * 1024 * 1024;
  }
}

type McpHarness = { readonly id: string; readonly capabilities: { readonly supportsMcp: boolean } };

/** Refuses, at the door, a harness without MCP support for a task that needs tools, naming both. */
export function assertHarnessSupportsTools(
  harness: McpHarness,
  task: { readonly key: string; readonly tools?: readonly unknown[] },
): void {
  if ((task.tools?.length ?? 0) > 0 && !harness.capabilities.supportsMcp) {
    throw new ConfigError(
      `harness "${harness.id}" does not support MCP, but task "${task.key}" needs tools (${task.tools?.length}); pick a harness with capabilities.supportsMcp (bash, claude_code, codex)`,
    );
  }
}

/**
 * The run-wide door check of `troupe eval` / `troupe validate` (before any episode runs): a task
 * of the run that declares tools is refused when no role of the env has a harness with
 * `supportsMcp` — in a one-role env, that role's harness — naming the harness(es), the task and
 * its taskset. When some role supports MCP, which role receives a task is the env's own code;
 * `agent.run` still refuses a run that hands tools to a harness without MCP.
 */
export function assertRunToolsServable(options: {
  env: string;
  taskset: string;
  roles: Readonly<Record<string, McpHarness>>;
  tasks: Iterable<{ readonly key: string; readonly tools?: readonly unknown[] }>;
}): void {
  const roles = Object.entries(options.roles);
  if (roles.some(([, harness]) => harness.capabilities.supportsMcp)) return;
  for (const task of options.tasks) {
    const count = task.tools?.length ?? 0;
    if (count === 0) continue;
    const [only] = roles;
    const who =
      roles.length === 1 && only
        ? `harness "${only[1].id}" (role ${only[0]}) does not support MCP`
        : `no role of env ${options.env} has a harness that supports MCP (${roles.map(([role, h]) => `${role}: "${h.id}"`).join(', ')})`;
    throw new ConfigError(
      `${who}, but task "${task.key}" of taskset ${options.taskset} declares tools (${count}); pick a harness with capabilities.supportsMcp (bash, claude_code, codex)`,
    );
  }
}

/**
 * Serves a task's tools for one run (after the door check): each call and result is appended
 * to `trace.info.toolCalls`. With the rollout's `session`, requests must present its secret
 * and each record is charged to its byte budget. Undefined when the task has no tools.
 */
export async function serveTaskTools(
  harness: { readonly id: string; readonly capabilities: { readonly supportsMcp: boolean } },
  task: { readonly key: string; readonly tools?: readonly ToolDefinition[] },
  trace: { info: Record<string, unknown> },
  session?: { readonly secret: string; chargeRecord(bytes: number): boolean },
): Promise<ServedTools | undefined> {
  if (!task.tools?.length) return undefined;
  assertHarnessSupportsTools(harness, task);
  const calls: ToolCallRecord[] = [];
  trace.info.toolCalls = calls;
  return serveToolsHttp(task.tools, {
    onCall: (r) => calls.push(r),
    ...(session ? { key: session.secret, charge: (bytes: number) => session.chargeRecord(bytes) } : {}),
  });
}
