import { request } from 'node:http';
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

  it('refuses requests without the key, with a wrong key, a foreign Host or a foreign Origin; no tool runs', async () => {
    let ran = 0;
    const counted = defineTool({ ...add, handler: ({ a, b }) => String(++ran && a + b) });
    const served = await serveToolsHttp([counted], { key: 'rollout-key' });
    const url = new URL(served.url);
    const port = Number(url.port);
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'add', arguments: { a: 1, b: 2 } },
    });
    const send = (path: string, headers: Record<string, string> = {}) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path,
            method: 'POST',
            headers: {
              host: `127.0.0.1:${port}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              ...headers,
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(call);
      });
    try {
      expect(url.pathname).toBe('/mcp/rollout-key');
      expect(await send('/mcp')).toBe(401);
      expect(await send('/mcp/not-the-key')).toBe(401);
      expect(await send('/mcp', { authorization: 'Bearer not-the-key' })).toBe(401);
      expect(await send('/mcp/rollout-key', { host: `evil.example:${port}` })).toBe(403);
      expect(await send('/mcp/rollout-key', { host: '127.0.0.1:1' })).toBe(403);
      expect(await send('/mcp/rollout-key', { origin: 'http://evil.example' })).toBe(403);
      expect(ran).toBe(0);
      expect(served.calls).toEqual([]);
      // The key in the path, or as a bearer token, with a loopback Host (and Origin) is served.
      expect(await send('/mcp/rollout-key', { origin: `http://127.0.0.1:${port}` })).toBe(200);
      expect(await send('/mcp', { authorization: 'Bearer rollout-key', host: `localhost:${port}` })).toBe(200);
      expect(ran).toBe(2);
    } finally {
      await served.close();
    }
  });

  it('answers a call whose record does not fit the rollout budget with an error, recording nothing', async () => {
    const served = await serveToolsHttp([add], { charge: (bytes) => bytes < 10 });
    const client = new Client({ name: 'test', version: '0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(served.url)));
      const out = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
      expect(out.isError).toBe(true);
      expect(JSON.stringify(out.content)).toContain('max_trace_bytes');
      expect(served.calls).toEqual([]);
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
