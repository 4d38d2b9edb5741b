import { installForIntegrationTest, runShellToolScenario } from '@troupe/harness-kit';
import { defineTool, serveToolsHttp } from '@troupe/verifiers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CLAUDE_CODE_PROGRAM, ClaudeCodeHarness } from './claude-code-harness.ts';

// The real Claude Code CLI calls a zod tool served over MCP streamable HTTP on loopback; the
// scripted model (through interception) asks for `mcp__troupe__add`.
describe('claude_code with MCP tools (real CLI)', () => {
  const add = defineTool({
    name: 'add',
    description: 'adds two numbers',
    input: z.object({ a: z.number(), b: z.number() }),
    handler: ({ a, b }) => String(a + b),
  });
  let served: Awaited<ReturnType<typeof serveToolsHttp>>;
  let harness: ClaudeCodeHarness;
  let unavailable: string | null = null;

  beforeAll(async () => {
    served = await serveToolsHttp([add]);
    harness = new ClaudeCodeHarness({ allowLocal: true, timeoutMs: 240_000, mcpServers: { troupe: { url: served.url } } });
    unavailable = await installForIntegrationTest({ harness, packageName: CLAUDE_CODE_PROGRAM.packageName, timeoutMs: 600_000 });
  }, 660_000);
  afterAll(async () => served?.close());

  it('declares supportsMcp, calls the MCP tool, and the result lands on the trace', async (context) => {
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
    expect(outcome.toolResult).toContain('42');
    expect(outcome.run.trace.lastReply).toBe('done');
  }, 300_000);
});
