import { installForIntegrationTest, runShellToolScenario } from '@troupe/harness-kit';
import { defineTool, serveToolsHttp } from '@troupe/verifiers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CODEX_PROGRAM, CodexHarness } from './codex-harness.ts';

// The real Codex CLI is given a zod tool served over MCP streamable HTTP on loopback; the
// scripted model (through interception) asks for `mcp__troupe__add`.
describe('codex with MCP tools (real CLI)', () => {
  const add = defineTool({
    name: 'add',
    description: 'adds two numbers',
    input: z.object({ a: z.number(), b: z.number() }),
    handler: ({ a, b }) => String(a + b),
  });
  let served: Awaited<ReturnType<typeof serveToolsHttp>>;
  let harness: CodexHarness;
  let unavailable: string | null = null;

  beforeAll(async () => {
    served = await serveToolsHttp([add]);
    harness = new CodexHarness({ allowLocal: true, timeoutMs: 240_000, mcpServers: { troupe: { url: served.url } } });
    unavailable = await installForIntegrationTest({ harness, packageName: CODEX_PROGRAM.packageName, timeoutMs: 600_000 });
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
    // codex read [mcp_servers.troupe] from config.toml and sent the server's tools in a
    // `namespace` entry; the responses dialect offered it to the model as `mcp__troupe__add` and
    // answered the call with `name: "add", namespace: "mcp__troupe"`, which codex routed to the server.
    expect(outcome.run.trace.tools.map((t) => t.name)).toContain('mcp__troupe__add');
    expect(served.calls).toEqual([{ name: 'add', args: { a: 2, b: 40 }, result: '42', isError: false }]);
    // The MCP result codex sent back is on the trace as the tool message of the next call.
    expect(outcome.toolResult).toMatch(/(^|\n)42$/);
  }, 300_000);
});
