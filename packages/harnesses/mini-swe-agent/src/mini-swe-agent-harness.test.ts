import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { createHarness, MiniSweAgentHarness } from './mini-swe-agent-harness.ts';

// Not run here: the program downloads from PyPI or its vendor. These tests check the generated
// install and launch commands and config files against a recording sandbox.
describe('mini_swe_agent (recorded, not run here)', () => {
  it('installs the pinned program and launches it wired to interception', async () => {
    const { checks, sandbox } = await runRecordedHarnessConformance({
      harness: new MiniSweAgentHarness(),
      expect: { install: ['mini-swe-agent==2.4.6', 'uv tool install'], launch: ['mini', '-y', '--exit-immediately', '-t'] },
    });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(sandbox.uploads).toEqual([]);
  });

  it('installs once per sandbox (a marker guards the install script)', async () => {
    const { sandbox } = await runRecordedHarnessConformance({ harness: new MiniSweAgentHarness(), expect: { install: [] } });
    const install = sandbox.commandLines.find((line) => line.includes('.installed-mini_swe_agent-'));
    expect(install).toMatch(/if \[ -e /);
  });

  it('declares a container-only program that executes code', () => {
    const harness = new MiniSweAgentHarness();
    expect(harness.capabilities.needsContainer).toBe(true);
    expect(harness.capabilities.executesCode).toBe(true);
    expect(harness.info.verifiedHere).toBe(false);
  });

  it('rejects unknown options naming the field', () => {
    expect(() => createHarness({ nonsense: 1 })).toThrow(/harness mini_swe_agent: options/);
  });
});
