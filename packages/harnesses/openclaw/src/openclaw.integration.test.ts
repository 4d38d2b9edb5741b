import { describeRealCliHarness } from '@troupe/program-kit/testing';
import { OpenClawHarness } from './openclaw-harness.ts';

// Runs the real OpenClaw CLI (installed from npm into ~/.cache/troupe/harnesses once, on Node 24
// from npm) in a local sandbox against the scripted model behind interception. OpenClaw takes
// about a minute per run on a busy 2-core machine (plugin and session setup), hence the timeouts.
describeRealCliHarness({
  harness: OpenClawHarness,
  toolName: 'exec',
  toolArguments: { command: 'echo hello > probe.txt' },
  toolResult: '(no output)',
  failureExit: false,
  runTimeoutMs: 400_000,
  testTimeoutMs: 480_000,
});
