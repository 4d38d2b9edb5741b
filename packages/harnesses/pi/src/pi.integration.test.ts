import { describeRealCliHarness } from '@troupe/program-kit/testing';
import { PiHarness } from './pi-harness.ts';

// Runs the real pi CLI (installed from npm into ~/.cache/troupe/harnesses once) in a local
// sandbox against the scripted model behind interception.
describeRealCliHarness({
  harness: PiHarness,
  toolName: 'bash',
  toolArguments: { command: 'echo hello > probe.txt' },
  toolResult: '(no output)',
});
