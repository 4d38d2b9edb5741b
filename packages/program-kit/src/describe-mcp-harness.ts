import {
  defineTool,
  Env,
  type Harness,
  InterceptionServer,
  type McpServers,
  type ModelRequest,
  registerHarness,
  serveToolsHttp,
  singleAgentEnv,
  Task,
} from '@troupe/verifiers';
import { scriptedClient } from '@troupe/verifiers/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { installForIntegrationTest, runShellToolScenario, type ShellToolScenarioResult } from './shell-tool-scenario.ts';

/** An npm-program harness class that takes MCP servers, as {@link describeMcpHarness} needs it. */
export interface McpHarnessClass {
  new (options: { allowLocal: boolean; timeoutMs: number; mcpServers?: McpServers }): Harness;
  readonly id: string;
  readonly installer: { readonly packageName: string };
}

const add = defineTool({
  name: 'add',
  description: 'adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => String(a + b),
});
const mul = defineTool({
  name: 'mul',
  description: 'multiplies two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => String(a * b),
});

/**
 * The real-CLI MCP tests of an npm-program harness (installed into the host cache once; skipped,
 * with the reason, when npm is out of reach). First, the harness built with `mcpServers` calls a
 * zod tool served over MCP streamable HTTP on loopback when the scripted model (through
 * interception) asks for `mcp__troupe__add`; the served tool sees the call and the program sends
 * back a tool result matching `toolResult`; `expectOutcome` adds the harness's own checks. Second,
 * the agent wires the servers: one declared in the agent config (`mcpServers.calc`) and the task's
 * own tools (served per run as server `troupe`) reach a harness built without any MCP option.
 */
export function describeMcpHarness(options: {
  harness: McpHarnessClass;
  /** What the tool result the program sent back for the MCP call must match. */
  toolResult: RegExp;
  /** The harness's own checks of the first scenario's outcome. */
  expectOutcome?: (outcome: ShellToolScenarioResult) => void;
}): void {
  const { harness: HarnessClass } = options;
  const packageName = HarnessClass.installer.packageName;

  describe(`${HarnessClass.id} with MCP tools (real CLI)`, () => {
    let served: Awaited<ReturnType<typeof serveToolsHttp>>;
    let harness: Harness;
    let unavailable: string | null = null;

    beforeAll(async () => {
      served = await serveToolsHttp([add]);
      harness = new HarnessClass({ allowLocal: true, timeoutMs: 240_000, mcpServers: { troupe: { url: served.url } } });
      unavailable = await installForIntegrationTest({ harness, packageName, timeoutMs: 600_000 });
    }, 660_000);
    afterAll(async () => served?.close());

    it('declares supportsMcp; the scripted model calls mcp__troupe__add and the call reaches the served tool', async (context) => {
      if (unavailable) context.skip(unavailable);
      expect(harness.capabilities.supportsMcp).toBe(true);
      const outcome = await runShellToolScenario({
        harness,
        toolName: 'mcp__troupe__add',
        toolArguments: { a: 2, b: 40 },
        fileName: 'unused.txt',
        prompt: 'Add 2 and 40 with the add tool.',
      });
      expect(outcome.run.result.exitCode).toBe(0);
      expect(served.calls).toEqual([{ name: 'add', args: { a: 2, b: 40 }, result: '42', isError: false }]);
      // The MCP result the program sent back is on the trace as the tool message of the next call.
      expect(outcome.toolResult).toMatch(options.toolResult);
      options.expectOutcome?.(outcome);
    }, 300_000);
  });

  describe(`${HarnessClass.id} gets MCP servers from the agent config and the task (real CLI)`, () => {
    const harnessId = `${HarnessClass.id}_mcp_agent_test`;
    // First the config server's tool, then the task's tool, then a final reply.
    const script = (request: ModelRequest) => {
      const answered = request.messages.filter((m) => m.role === 'tool').length;
      if (answered === 0) return { toolCalls: [{ id: 'call_calc', name: 'mcp__calc__add', arguments: { a: 2, b: 40 } }] };
      if (answered === 1) return { toolCalls: [{ id: 'call_task', name: 'mcp__troupe__mul', arguments: { a: 6, b: 7 } }] };
      return 'done';
    };
    let served: Awaited<ReturnType<typeof serveToolsHttp>>;
    let scripted: Awaited<ReturnType<typeof scriptedClient>>;
    const interception = new InterceptionServer();
    let unavailable: string | null = null;

    beforeAll(async () => {
      served = await serveToolsHttp([add]);
      scripted = await scriptedClient({ script });
      await interception.start();
      const harness = new HarnessClass({ allowLocal: true, timeoutMs: 240_000 });
      registerHarness(harnessId, () => harness);
      unavailable = await installForIntegrationTest({ harness, packageName, timeoutMs: 600_000 });
    }, 660_000);
    afterAll(async () => {
      await served?.close();
      await scripted?.close();
      await interception.close();
    });

    it('calls the config server and the task tool; the calls land on the trace', async (context) => {
      if (unavailable) context.skip(unavailable);
      const env = await Env.create({
        definition: singleAgentEnv,
        config: {
          id: 'single-agent',
          agent: { harness: harnessId, runtime: 'local', mcpServers: { calc: { url: served.url } } },
        },
        run: { model: 'scripted-model', client: scripted.client },
        interception: async () => interception,
      });
      const task = new Task({ prompt: 'Add 2 and 40, then multiply 6 by 7, with the tools.' }, { tools: [mul] });
      const episode = await env.runEpisode({ task, group: { id: 'g', index: 0 } });
      expect(episode.errors).toEqual([]);
      const trace = episode.traces[0]!;
      expect(trace.errors).toEqual([]);
      expect(served.calls).toEqual([{ name: 'add', args: { a: 2, b: 40 }, result: '42', isError: false }]);
      expect(trace.info.toolCalls).toEqual([{ name: 'mul', args: { a: 6, b: 7 }, result: '42', isError: false }]);
      const names = trace.tools.map((t) => t.name);
      expect(names).toContain('mcp__calc__add');
      expect(names).toContain('mcp__troupe__mul');
      expect(trace.lastReply).toBe('done');
    }, 300_000);
  });
}
