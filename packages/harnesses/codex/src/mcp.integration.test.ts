import { describeMcpHarness } from '@troupe/program-kit/testing';
import { expect } from 'vitest';
import { CodexHarness } from './codex-harness.ts';

// The real Codex CLI is given a zod tool served over MCP streamable HTTP on loopback; the
// scripted model (through interception) asks for `mcp__troupe__add`. Then the agent wires the
// servers: one from the agent config, and the task's own tools.
describeMcpHarness({
  harness: CodexHarness,
  toolResult: /(^|\n)42$/,
  // codex read [mcp_servers.troupe] from config.toml and sent the server's tools in a
  // `namespace` entry; the responses dialect offered it to the model as `mcp__troupe__add` and
  // answered the call with `name: "add", namespace: "mcp__troupe"`, which codex routed to the server.
  expectOutcome: (outcome) => expect(outcome.run.trace.tools.map((t) => t.name)).toContain('mcp__troupe__add'),
});
