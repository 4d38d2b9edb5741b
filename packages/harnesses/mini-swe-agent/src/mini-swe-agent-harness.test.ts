import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { MiniSweAgentHarness } from './mini-swe-agent-harness.ts';

// The program downloads from PyPI; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: MiniSweAgentHarness,
  install: ['mini-swe-agent==2.4.6', 'uv tool install'],
  launch: ['mini', '-y', '--exit-immediately', '-t'],
});
