import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ConfigError } from '../errors/troupe-error.ts';
import type { ToolDefinition as NeutralToolDefinition } from '../model/messages.ts';
import { type McpServers, mcpToolName } from './mcp-servers.ts';

/** A tool of a connected MCP server, ready for a tool loop (same shape as `LoopTool`). */
export interface McpLoopTool {
  definition: NeutralToolDefinition;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
}

/** The tools of every connected server, and a close that ends the connections (and stdio children). */
export interface McpConnection {
  readonly tools: McpLoopTool[];
  close(): Promise<void>;
}

type ContentItem = { type: string; text?: string; [key: string]: unknown };

/** The text of an MCP tool result: text items joined, other items as a short JSON mark. */
export function mcpResultText(content: readonly ContentItem[] | undefined): string {
  return (content ?? [])
    .map((item) => (item.type === 'text' && typeof item.text === 'string' ? item.text : `[${item.type} content]`))
    .join('\n');
}

/**
 * Connects to each server with the official MCP client (streamable HTTP, or stdio spawned on
 * this host with `cwd`), lists its tools and offers each as `mcp__<server>__<tool>`. A server
 * that cannot be reached fails the whole connect with an error naming it.
 */
export async function connectMcpServers(servers: McpServers, options: { cwd?: string } = {}): Promise<McpConnection> {
  const entries = Object.entries(servers);
  if (entries.length === 0) return { tools: [], close: async () => {} };
  const { Client: ClientClass } = await import('@modelcontextprotocol/sdk/client/index.js');
  const clients: Client[] = [];
  const tools: McpLoopTool[] = [];
  const close = async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
  };
  try {
    for (const [name, spec] of entries) {
      const client = new ClientClass({ name: 'troupe-bash', version: '0.0.0' });
      let transport: Parameters<Client['connect']>[0];
      if ('url' in spec) {
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        transport = new StreamableHTTPClientTransport(new URL(spec.url));
      } else {
        const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
        transport = new StdioClientTransport({
          command: spec.command,
          args: spec.args ?? [],
          env: { ...getDefaultEnvironment(), ...(spec.env ?? {}) },
          ...(options.cwd ? { cwd: options.cwd } : {}),
          stderr: 'ignore',
        });
      }
      try {
        await client.connect(transport);
      } catch (error) {
        throw new ConfigError(`MCP server "${name}" could not be reached: ${(error as Error).message}`, { cause: error });
      }
      clients.push(client);
      const listed = await client.listTools();
      for (const tool of listed.tools) {
        const definition: NeutralToolDefinition = {
          name: mcpToolName(name, tool.name),
          parameters: tool.inputSchema as Record<string, unknown>,
        };
        if (tool.description) definition.description = tool.description;
        tools.push({
          definition,
          run: async (args, signal) => {
            const result = await client.callTool({ name: tool.name, arguments: args }, undefined, { signal });
            const text = mcpResultText(result.content as ContentItem[] | undefined);
            return result.isError ? `error: ${text}` : text;
          },
        });
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { tools, close };
}
