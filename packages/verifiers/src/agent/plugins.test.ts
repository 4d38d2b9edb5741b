import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHarness, loadRuntime, normalizePluginId, setPluginSearchPaths } from './plugins.ts';

/**
 * A user's project with one harness package installed, `@troupe/harness-probe-kit` (plain ESM, its
 * `createHarness` echoing its options): what the plugin search paths must find. The workspace's
 * real harness packages are resolved by id in tests/integration (the core's tests load no plugin).
 */
function projectWithProbeHarness(): string {
  const project = mkdtempSync(join(tmpdir(), 'troupe-plugins-'));
  const dir = join(project, 'node_modules/@troupe/harness-probe-kit');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: '@troupe/harness-probe-kit', type: 'module', exports: { '.': './index.js' } }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `export function createHarness(options, context) {
  return { id: 'probe_kit', options, context, capabilities: { executesCode: true } };
}
`,
  );
  return project;
}

describe('plugins', () => {
  it('normalizes owner/name@version ids to snake_case names', () => {
    expect(normalizePluginId('acme/Claude-Code@2.1')).toBe('claude_code');
    expect(normalizePluginId('bash')).toBe('bash');
  });

  it('resolves built-ins and installed @troupe/harness-<id> packages by id', async () => {
    setPluginSearchPaths([projectWithProbeHarness()]);
    expect((await loadHarness('bash')).id).toBe('bash');
    expect((await loadHarness({ id: 'null' })).capabilities.executesCode).toBe(false);
    const probe = (await loadHarness({ id: 'acme/Probe-Kit@1.0', turns: 3 })) as unknown as {
      id: string;
      options: Record<string, unknown>;
    };
    expect(probe.id).toBe('probe_kit');
    expect(probe.options).toEqual({ turns: 3 });
    expect((await loadRuntime('local')).id).toBe('local');
  });

  it('names the missing package for an unknown id', async () => {
    await expect(loadHarness('no_such_harness')).rejects.toThrow(/@troupe\/harness-no-such-harness is not installed/);
  });
});
