import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { Terminus2Harness } from './terminus-2-harness.ts';

// The program downloads from PyPI; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: Terminus2Harness,
  install: ['harbor==0.21.0', 'tmux'],
  launch: ['uv', 'run', '--script'],
});
