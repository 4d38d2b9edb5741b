import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { createHarness, RlmHarness } from './rlm-harness.ts';

// Not run here: the program downloads from PyPI or its vendor. These tests check the generated
// install and launch commands and config files against a recording sandbox.
describe('rlm (recorded, not run here)', () => {
  it('installs the pinned program and launches it wired to interception', async () => {
    const { checks, sandbox } = await runRecordedHarnessConformance({
      harness: new RlmHarness(),
      expect: { install: ['git+https://github.com/PrimeIntellect-ai/nano-rlm@main'], launch: ['rlm', '--model', '--max-depth'] },
    });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(sandbox.uploads).toEqual([]);
  });

  it('installs once per sandbox (a marker guards the install script)', async () => {
    const { sandbox } = await runRecordedHarnessConformance({ harness: new RlmHarness(), expect: { install: [] } });
    const install = sandbox.commandLines.find((line) => line.includes('.installed-rlm-'));
    expect(install).toMatch(/if \[ -e /);
  });

  it('declares a container-only program that executes code', () => {
    const harness = new RlmHarness();
    expect(harness.capabilities.needsContainer).toBe(true);
    expect(harness.capabilities.executesCode).toBe(true);
    expect(harness.info.verifiedHere).toBe(false);
  });

  it('rejects unknown options naming the field', () => {
    expect(() => createHarness({ nonsense: 1 })).toThrow(/harness rlm: options/);
  });
});
