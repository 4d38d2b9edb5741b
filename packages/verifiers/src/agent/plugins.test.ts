import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHarness, loadRuntime, normalizePluginId, setPluginSearchPaths } from './plugins.ts';

const root = resolve(import.meta.dirname, '../../../..');

describe('plugins', () => {
  it('normalizes owner/name@version ids to snake_case names', () => {
    expect(normalizePluginId('acme/Claude-Code@2.1')).toBe('claude_code');
    expect(normalizePluginId('bash')).toBe('bash');
  });

  it('resolves built-ins and installed @troupe/harness-<id> packages by id', async () => {
    setPluginSearchPaths([root]);
    expect((await loadHarness('bash')).id).toBe('bash');
    expect((await loadHarness({ id: 'null' })).capabilities.executesCode).toBe(false);
    const claude = await loadHarness('claude_code');
    expect(claude.id).toBe('claude_code');
    expect(claude.capabilities.executesCode).toBe(true);
    expect((await loadRuntime('local')).id).toBe('local');
  });

  it('names the missing package for an unknown id', async () => {
    await expect(loadHarness('no_such_harness')).rejects.toThrow(/@troupe\/harness-no-such-harness is not installed/);
  });
});
