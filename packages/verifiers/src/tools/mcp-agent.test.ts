import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { singleAgentEnv } from '../env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../env/env.ts';
import type { ModelRequest } from '../model/model-client.ts';
import { Task } from '../task/task.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';
import { defineTool, type ServedTools, serveToolsHttp } from './mcp-server.ts';

const add = defineTool({
  name: 'add',
  description: 'adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => String(a + b),
});
const stdioServer = fileURLToPath(new URL('./__fixtures__/stdio-mcp-server.mjs', import.meta.url));

// The scripted model calls `toolName` once, then answers with the tool result it was sent.
function callOnce(toolName: string, args: Record<string, unknown>) {
  return (request: ModelRequest) => {
    const last = request.messages.at(-1);
    if (last?.role === 'user') return { toolCalls: [{ name: toolName, arguments: args }] };
    if (last?.role === 'tool') return `result: ${last.content}`;
    return 'unexpected';
  };
}

describe('MCP tools through the agent (bash harness, real MCP client and server)', () => {
  let scripted: ScriptedClient;
  let served: ServedTools;
  let script: (request: ModelRequest) => unknown = () => 'unset';
  beforeAll(async () => {
    scripted = await scriptedClient({ script: (request) => script(request) as never });
    served = await serveToolsHttp([add]);
  });
  afterAll(async () => {
    await scripted.close();
    await served.close();
  });

  const env = (agent: Record<string, unknown>) =>
    Env.create({
      definition: singleAgentEnv,
      config: { id: 'single-agent', agent: { runtime: 'local', ...agent } },
      run: { model: 'scripted-model', client: scripted.client },
    });

  it('gives the bash harness the tools of an MCP server declared once in the agent config (streamable HTTP)', async () => {
    script = callOnce('mcp__calc__add', { a: 2, b: 40 });
    const before = served.calls.length;
    const e = await env({ harness: 'bash', mcpServers: { calc: { url: served.url } } });
    const episode = await e.runEpisode({ task: new Task({ prompt: 'Add 2 and 40.' }), group: { id: 'g', index: 0 } });
    const trace = episode.traces[0]!;
    expect(trace.errors).toEqual([]);
    expect(trace.tools.map((t) => t.name)).toEqual(['bash', 'edit', 'mcp__calc__add']);
    expect(trace.tools[2]?.parameters).toMatchObject({ required: ['a', 'b'] });
    expect(served.calls.slice(before)).toEqual([{ name: 'add', args: { a: 2, b: 40 }, result: '42', isError: false }]);
    expect(trace.messages.find((m) => m.role === 'tool')?.content).toBe('42');
    expect(trace.lastReply).toBe('result: 42');
  });

  it('reads the servers from TOML ([env.agent.mcpServers.<name>])', async () => {
    script = callOnce('mcp__calc__add', { a: 1, b: 2 });
    const toml = parseToml(
      `[env.agent]\nharness = "bash"\nruntime = "local"\n[env.agent.mcpServers.calc]\nurl = "${served.url}"\n`,
    );
    const config = (toml.env as Record<string, unknown>).agent as Record<string, unknown>;
    const e = await env(config);
    const trace = (await e.runEpisode({ task: new Task({ prompt: 'Add 1 and 2.' }), group: { id: 'g', index: 0 } })).traces[0]!;
    expect(trace.errors).toEqual([]);
    expect(trace.lastReply).toBe('result: 3');
  });

  it('spawns a stdio MCP server declared by command and passes its error results back as errors', async () => {
    script = callOnce('mcp__loud__shout', { text: 'hello' });
    const e = await env({
      harness: 'bash',
      mcpServers: { loud: { command: process.execPath, args: [stdioServer], env: { FIXTURE_TOKEN: 'sekret-123' } } },
    });
    const trace = (await e.runEpisode({ task: new Task({ prompt: 'Shout hello.' }), group: { id: 'g', index: 0 } })).traces[0]!;
    expect(trace.errors).toEqual([]);
    expect(trace.lastReply).toMatch(/^result: HELLO \(pid \d+\)$/);
    // The server's env values stay off the trace.
    expect(JSON.stringify(trace.toJSON())).not.toContain('sekret-123');
    expect(trace.agent.config).toMatchObject({ mcpServers: { loud: { env: { FIXTURE_TOKEN: '[redacted]' } } } });
    // Arguments the server's schema rejects come back as an error result, not a crash.
    script = callOnce('mcp__loud__shout', { text: 7 });
    const bad = (await e.runEpisode({ task: new Task({ prompt: 'Shout 7.' }), group: { id: 'g', index: 1 } })).traces[0]!;
    expect(bad.errors).toEqual([]);
    expect(bad.messages.find((m) => m.role === 'tool')?.content).toMatch(/^error: /);
  });

  it("serves a task's own tools as server troupe and records each call and result on the trace", async () => {
    script = callOnce('mcp__troupe__add', { a: 20, b: 22 });
    const e = await env({ harness: 'bash' });
    const task = new Task({ prompt: 'Add 20 and 22.' }, { tools: [add] });
    const trace = (await e.runEpisode({ task, group: { id: 'g', index: 0 } })).traces[0]!;
    expect(trace.errors).toEqual([]);
    expect(trace.tools.map((t) => t.name)).toContain('mcp__troupe__add');
    expect(trace.info.toolCalls).toEqual([{ name: 'add', args: { a: 20, b: 22 }, result: '42', isError: false }]);
    expect(trace.lastReply).toBe('result: 42');
    // `with` keeps the tools.
    expect(task.with({ prompt: 'again' }).tools).toEqual([add]);
  });

  it('refuses at the door a harness without MCP support, naming the harness (config servers and task tools)', async () => {
    await expect(env({ harness: 'null', mcpServers: { calc: { url: served.url } } })).rejects.toThrow(
      /harness "null" does not support MCP.*calc/,
    );
    const e = await env({ harness: 'null' });
    const task = new Task({ prompt: 'Add.', name: 'needs-add' }, { tools: [add] });
    // The agent refuses the run before booting a sandbox; the episode fails with that error.
    const episode = await e.runEpisode({ task, group: { id: 'g', index: 0 } });
    expect(episode.ok).toBe(false);
    expect(episode.traces).toEqual([]);
    expect(episode.errors[0]?.message).toMatch(/harness "null" does not support MCP, but task "needs-add" needs tools/);
  });

  it('rejects a malformed server entry by field', async () => {
    await expect(env({ harness: 'bash', mcpServers: { calc: { url: 'not a url' } } })).rejects.toThrow(/mcpServers\.calc/);
    await expect(env({ harness: 'bash', mcpServers: { 'bad name': { url: served.url } } })).rejects.toThrow(/mcpServers/);
  });
});
