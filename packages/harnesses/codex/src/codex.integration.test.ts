import { describeRealCliHarness } from '@troupe/program-kit/testing';
import { CodexHarness } from './codex-harness.ts';

// Runs the real Codex CLI (installed from npm into ~/.cache/troupe/harnesses once) in a local
// sandbox against the scripted model behind interception.
describeRealCliHarness({
  harness: CodexHarness,
  toolName: 'exec_command',
  toolArguments: { cmd: 'echo hello > probe.txt' },
  toolResult: /Process exited with code 0/,
  envToolArguments: { cmd: 'env > env.txt' },
});
