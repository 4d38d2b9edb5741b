// @troupe/harness-claude-code: the harness and its plugin entry (`createHarness`, found by the harness id).
export { parseResult, claudeMcpConfig, ClaudeCodeHarness, CLAUDE_CODE_PROGRAM, createHarness } from './claude-code-harness.ts';
