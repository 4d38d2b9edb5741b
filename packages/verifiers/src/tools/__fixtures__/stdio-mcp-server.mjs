// A minimal external MCP server over stdio (official SDK): one `shout` tool. Used by the tests
// of MCP servers declared by `command` in an agent's config.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'stdio-fixture', version: '0.0.0' });
server.registerTool(
  'shout',
  { description: 'upper-cases a text', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text: `${text.toUpperCase()} (pid ${process.pid})` }] }),
);
await server.connect(new StdioServerTransport());
