import type { Harness } from '@troupe/verifiers';
import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';

/** A harness class as {@link describeRecordedHarness} needs it (what `defineProgramHarness` returns). */
export interface RecordedHarnessClass {
  new (): Harness & { info: { verifiedHere: boolean } };
  readonly id: string;
  readonly createHarness: (options?: unknown) => Harness;
}

/**
 * The recorded tests of a harness whose program is installed inside the sandbox and not run by
 * the tests (its downloads are out of reach): against a recording sandbox it installs the pinned
 * program (every `install` string is in the install commands) once per sandbox under a marker,
 * launches it wired to interception (every `launch` string in the launch command) with no upload,
 * declares a container-only program that executes code, and rejects an unknown option naming the
 * field. `more` adds the harness's own cases inside the same `describe`.
 */
export function describeRecordedHarness(options: {
  harness: RecordedHarnessClass;
  install: string[];
  launch: string[];
  more?: () => void;
}): void {
  const { harness: HarnessClass } = options;
  describe(`${HarnessClass.id} (recorded, not run here)`, () => {
    it('installs the pinned program and launches it wired to interception', async () => {
      const { checks, sandbox } = await runRecordedHarnessConformance({
        harness: new HarnessClass(),
        expect: { install: options.install, launch: options.launch },
      });
      expect(checks.filter((check) => !check.ok)).toEqual([]);
      expect(sandbox.uploads).toEqual([]);
    });

    it('installs once per sandbox (a marker guards the install script)', async () => {
      const { sandbox } = await runRecordedHarnessConformance({ harness: new HarnessClass(), expect: { install: [] } });
      const install = sandbox.commandLines.find((line) => line.includes(`.installed-${HarnessClass.id}-`));
      expect(install).toMatch(/if \[ -e /);
    });

    it('declares a container-only program that executes code', () => {
      const harness = new HarnessClass();
      expect(harness.capabilities.needsContainer).toBe(true);
      expect(harness.capabilities.executesCode).toBe(true);
      expect(harness.info.verifiedHere).toBe(false);
    });

    it('rejects unknown options naming the field', () => {
      expect(() => HarnessClass.createHarness({ nonsense: 1 })).toThrow(new RegExp(`harness ${HarnessClass.id}: options`));
    });

    options.more?.();
  });
}
