import { describeMcpHarness } from '@troupe/program-kit/testing';
import { expect } from 'vitest';
import { ClaudeCodeHarness } from './claude-code-harness.ts';

// The real Claude Code CLI calls a zod tool served over MCP streamable HTTP on loopback; the
// scripted model (through interception) asks for `mcp__troupe__add`. Then the agent wires the
// servers: one from the agent config, and the task's own tools.
describeMcpHarness({
  harness: ClaudeCodeHarness,
  toolResult: /42/,
  expectOutcome: (outcome) => expect(outcome.run.trace.lastReply).toBe('done'),
});
