import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { HermesAgentHarness } from './hermes-agent-harness.ts';

// The program downloads from PyPI; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: HermesAgentHarness,
  install: ['hermes-agent[acp,mcp]==0.19.0'],
  launch: ['hermes', 'chat', '-q'],
});
