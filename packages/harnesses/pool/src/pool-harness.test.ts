import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { createHarness, PoolHarness } from './pool-harness.ts';

// Not run here: the program downloads from PyPI or its vendor. These tests check the generated
// install and launch commands and config files against a recording sandbox.
describe('pool (recorded, not run here)', () => {
  it('installs the pinned program and launches it wired to interception', async () => {
    const { checks, sandbox } = await runRecordedHarnessConformance({
      harness: new PoolHarness(),
      expect: { install: ['POOL_VERSION=1.0.15', 'install.sh'], launch: ['pool', 'run', '--yes'] },
    });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(sandbox.uploads).toEqual([]);
  });

  it('installs once per sandbox (a marker guards the install script)', async () => {
    const { sandbox } = await runRecordedHarnessConformance({ harness: new PoolHarness(), expect: { install: [] } });
    const install = sandbox.commandLines.find((line) => line.includes('.installed-pool-'));
    expect(install).toMatch(/if \[ -e /);
  });

  it('declares a container-only program that executes code', () => {
    const harness = new PoolHarness();
    expect(harness.capabilities.needsContainer).toBe(true);
    expect(harness.capabilities.executesCode).toBe(true);
    expect(harness.info.verifiedHere).toBe(false);
  });

  it('rejects unknown options naming the field', () => {
    expect(() => createHarness({ nonsense: 1 })).toThrow(/harness pool: options/);
  });
});
