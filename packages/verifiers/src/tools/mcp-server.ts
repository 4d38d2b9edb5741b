import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { z } from 'zod';
import { ConfigError } from '../errors/troupe-error.ts';

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

function buildServer(modules: McpModules, tools: readonly ToolDefinition[], onCall: (r: ToolCallRecord) => void): McpServer {
  const server = new modules.McpServer({ name: 'troupe-tools', version: '0.0.0' });
  for (const tool of tools) {
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.input.shape }, async (args: unknown) => {
      try {
        const result = await tool.handler(args as never);
        onCall({ name: tool.name, args, result, isError: false });
        return { content: [{ type: 'text' as const, text: result }] };
      } catch (err) {
        const result = err instanceof Error ? err.message : String(err);
        onCall({ name: tool.name, args, result, isError: true });
        return { content: [{ type: 'text' as const, text: result }], isError: true };
      }
    });
  }
  return server;
}

/** A running loopback MCP endpoint. */
export interface ServedTools {
  /** Streamable-HTTP URL, e.g. `http://127.0.0.1:PORT/mcp`. */
  readonly url: string;
  /** Every tool call served so far, with its result. */
  readonly calls: readonly ToolCallRecord[];
  close(): Promise<void>;
}

/**
 * Serves `tools` over MCP streamable HTTP (stateless) on 127.0.0.1, for harnesses that declare
 * `supportsMcp`. Each call and its result is kept in `calls` and passed to `onCall`.
 */
export async function serveToolsHttp(
  tools: readonly ToolDefinition[],
  opts: { onCall?: (r: ToolCallRecord) => void } = {},
): Promise<ServedTools> {
  const modules = await loadMcp();
  const calls: ToolCallRecord[] = [];
  const record = (r: ToolCallRecord): void => {
    calls.push(r);
    opts.onCall?.(r);
  };
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    const server = buildServer(modules, tools, record);
    const transport = new modules.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
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
 * to `trace.info.toolCalls`. Undefined when the task has no tools.
 */
export async function serveTaskTools(
  harness: { readonly id: string; readonly capabilities: { readonly supportsMcp: boolean } },
  task: { readonly key: string; readonly tools?: readonly ToolDefinition[] },
  trace: { info: Record<string, unknown> },
): Promise<ServedTools | undefined> {
  if (!task.tools?.length) return undefined;
  assertHarnessSupportsTools(harness, task);
  const calls: ToolCallRecord[] = [];
  trace.info.toolCalls = calls;
  return serveToolsHttp(task.tools, { onCall: (r) => calls.push(r) });
}
