import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadHarness, setPluginSearchPaths } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';

/** The folder of this package: the project whose node_modules hold the harness packages. */
const here = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  devDependencies: Record<string, string>;
};
/** Every `@troupe/harness-<id>` this package installs (the kit is a library, not a harness). */
const harnessPackages = Object.keys(manifest.devDependencies).filter(
  (name) => name.startsWith('@troupe/harness-') && name !== '@troupe/program-kit',
);

describe('installed @troupe/harness-<id> packages, resolved by id', () => {
  it('covers every harness package of the workspace', () => {
    expect(harnessPackages.length).toBeGreaterThanOrEqual(11);
  });

  it.each(harnessPackages)('%s loads by its id and reports it', async (name) => {
    setPluginSearchPaths([here]);
    const id = name.replace('@troupe/harness-', '').replace(/-/g, '_');
    const harness = await loadHarness(id);
    expect(harness.id).toBe(id);
    expect(typeof harness.capabilities.executesCode).toBe('boolean');
  });

  it('claude_code, as an owner/name@version ref, is the claude-code package and executes code', async () => {
    setPluginSearchPaths([here]);
    const claude = await loadHarness('anthropic/claude-code@2.1');
    expect(claude.id).toBe('claude_code');
    expect(claude.capabilities.executesCode).toBe(true);
  });
});
