import { describeRecordedHarness } from '@troupe/program-kit/testing';
import { PoolHarness } from './pool-harness.ts';

// The program downloads from its vendor; these tests check the generated install and launch commands
// and config files against a recording sandbox.
describeRecordedHarness({
  harness: PoolHarness,
  install: ['POOL_VERSION=1.0.15', 'install.sh'],
  launch: ['pool', 'run', '--yes'],
});
