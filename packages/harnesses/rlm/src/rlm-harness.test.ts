import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { RlmHarness } from './rlm-harness.ts';

// The program downloads from GitHub through uv; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: RlmHarness,
  install: ['git+https://github.com/PrimeIntellect-ai/nano-rlm@main'],
  launch: ['rlm', '--model', '--max-depth'],
});
