import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { BrowserUseHarness } from './browser-use-harness.ts';

// The program downloads from PyPI; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: BrowserUseHarness,
  install: ['browser-harness==0.1.8', 'chromium'],
  launch: ['uv', 'run', '--script'],
});
