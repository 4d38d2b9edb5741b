import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '../../../errors/troupe-error.ts';
import type { Sandbox } from '../../../runtime/runtime.ts';

/** Always carried across, when it exists (the spec's convention for harness logs and outputs). */
export const DEFAULT_ARTIFACTS_DIR = '/logs/artifacts';

/** Largest artifact copied into the judge's sandbox by default (bytes). */
export const MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024;

/** What was restored into the judge's sandbox. */
export interface ArtifactReport {
  restored: string[];
  /** Declared artifacts that could not be copied (absent, or refused by the sandbox), with why. */
  missing: { path: string; reason: string }[];
}

/**
 * Copies the declared artifact paths (files or directories, relative to the workdir or absolute
 * in the sandbox) from the solver's sandbox into the judge's, through a host temporary directory.
 * A declared artifact that cannot be read (absent, or a symlink out of the sandbox) is reported,
 * not fatal: the judge is told, and judges the solver by it. `/logs/artifacts` is always tried
 * and silently skipped when absent.
 */
export async function restoreArtifacts(options: {
  from: Sandbox;
  to: Sandbox;
  declared: readonly string[];
  /** Largest artifact (its files' sizes summed) copied; a larger one is reported missing (default 1 GiB). */
  maxBytes?: number;
}): Promise<ArtifactReport> {
  const paths = [...new Set([...options.declared, DEFAULT_ARTIFACTS_DIR])];
  const report: ArtifactReport = { restored: [], missing: [] };
  const host = await mkdtemp(join(tmpdir(), 'troupe-artifacts-'));
  try {
    for (const [index, path] of paths.entries()) {
      const local = join(host, String(index));
      try {
        // Sizes are checked before any byte is copied: a sparse 1.5 GiB file stays in the sandbox.
        await options.from.download(path, local, { maxBytes: options.maxBytes ?? MAX_ARTIFACT_BYTES });
      } catch (error) {
        if (path === DEFAULT_ARTIFACTS_DIR && !options.declared.includes(path)) continue;
        report.missing.push({ path, reason: (error as Error).message ?? String(error) });
        continue;
      }
      try {
        await options.to.upload(local, path);
      } catch (error) {
        throw new SandboxError(`could not restore artifact ${path} into the judge's sandbox: ${(error as Error).message}`, {
          cause: error,
        });
      }
      report.restored.push(path);
    }
  } finally {
    await rm(host, { recursive: true, force: true });
  }
  return report;
}
