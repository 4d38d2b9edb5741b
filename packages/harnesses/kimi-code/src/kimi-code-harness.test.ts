import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { KimiCodeHarness } from './kimi-code-harness.ts';

// The program downloads from its vendor; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: KimiCodeHarness,
  install: ['https://code.kimi.com/kimi-code/install.sh', 'KIMI_CODE_VERSION=0.36.0'],
  launch: ['kimi', '--print', '--yolo', '-p'],
});
