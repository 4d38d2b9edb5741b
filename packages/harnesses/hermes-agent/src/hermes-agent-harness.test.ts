import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { createHarness, HermesAgentHarness } from './hermes-agent-harness.ts';

// Not run here: the program downloads from PyPI or its vendor. These tests check the generated
// install and launch commands and config files against a recording sandbox.
describe('hermes_agent (recorded, not run here)', () => {
  it('installs the pinned program and launches it wired to interception', async () => {
    const { checks, sandbox } = await runRecordedHarnessConformance({
      harness: new HermesAgentHarness(),
      expect: { install: ['hermes-agent[acp,mcp]==0.19.0'], launch: ['hermes', 'chat', '-q'] },
    });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(sandbox.uploads).toEqual([]);
  });

  it('installs once per sandbox (a marker guards the install script)', async () => {
    const { sandbox } = await runRecordedHarnessConformance({ harness: new HermesAgentHarness(), expect: { install: [] } });
    const install = sandbox.commandLines.find((line) => line.includes('.installed-hermes_agent-'));
    expect(install).toMatch(/if \[ -e /);
  });

  it('declares a container-only program that executes code', () => {
    const harness = new HermesAgentHarness();
    expect(harness.capabilities.needsContainer).toBe(true);
    expect(harness.capabilities.executesCode).toBe(true);
    expect(harness.info.verifiedHere).toBe(false);
  });

  it('rejects unknown options naming the field', () => {
    expect(() => createHarness({ nonsense: 1 })).toThrow(/harness hermes_agent: options/);
  });
});
