import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { assertHarnessSupportsTools, assertRunToolsServable, defineTool, serveToolsHttp } from './mcp-server.ts';

const add = defineTool({
  name: 'add',
  description: 'adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => String(a + b),
});

describe('serveToolsHttp', () => {
  it('serves a zod tool over streamable HTTP to the official MCP client and records call + result', async () => {
    const served = await serveToolsHttp([add]);
    const client = new Client({ name: 'test', version: '0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(served.url)));
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toEqual(['add']);
      expect(listed.tools[0]?.inputSchema.required).toEqual(['a', 'b']);
      const out = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
      expect(out.content).toEqual([{ type: 'text', text: '42' }]);
      const bad = await client.callTool({ name: 'add', arguments: { a: 'x' } });
      expect(bad.isError).toBe(true);
      expect(served.calls).toEqual([{ name: 'add', args: { a: 2, b: 40 }, result: '42', isError: false }]);
    } finally {
      await client.close();
      await served.close();
    }
  });

  it('refuses a harness without supportsMcp for a task with tools, naming both', () => {
    const harness = { id: 'null', capabilities: { supportsMcp: false } };
    expect(() => assertHarnessSupportsTools(harness, { key: 't1', tools: [add] })).toThrow(/"null".*"t1"/);
    expect(() => assertHarnessSupportsTools(harness, { key: 't2' })).not.toThrow();
  });

  it('refuses a run whose task declares tools when no role can serve them, naming the harness, the task and its taskset', () => {
    const none = { id: 'null', capabilities: { supportsMcp: false } };
    const bash = { id: 'bash', capabilities: { supportsMcp: true } };
    const tasks = [{ key: 'plain' }, { key: 'needs-add', tools: [add] }];
    const check =
      (roles: Record<string, typeof none>, list = tasks) =>
      () =>
        assertRunToolsServable({ env: 'e', taskset: 'ts', roles, tasks: list });
    expect(check({ agent: none })).toThrow(
      'harness "null" (role agent) does not support MCP, but task "needs-add" of taskset ts declares tools (1)',
    );
    expect(check({ user: none, assistant: { ...none, id: 'pi' } })).toThrow(
      'no role of env e has a harness that supports MCP (user: "null", assistant: "pi"), but task "needs-add"',
    );
    // A role that can serve them: which role gets the task is the env's code (agent.run checks per run).
    expect(check({ user: none, assistant: bash })).not.toThrow();
    expect(check({ agent: none }, [{ key: 'plain' }])).not.toThrow();
  });
});
