import { describeRealCliHarness } from '@troupe/program-kit/testing';
import { ClaudeCodeHarness } from './claude-code-harness.ts';

// Runs the real Claude Code CLI (installed from npm into ~/.cache/troupe/harnesses once) in a
// local sandbox against the scripted model behind interception.
describeRealCliHarness({
  harness: ClaudeCodeHarness,
  toolName: 'Bash',
  toolArguments: { command: 'echo hello > probe.txt', description: 'write the probe file' },
  toolResult: '(Bash completed with no output)',
  envToolArguments: { command: 'env > env.txt', description: 'write the environment' },
});
