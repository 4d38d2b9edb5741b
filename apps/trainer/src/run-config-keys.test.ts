import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunConfigError, readRunConfigFile } from './run-config.ts';

describe('readRunConfigFile', () => {
  it('refuses a [__proto__] table (TOML) or a "__proto__" key (JSON), naming it, instead of applying it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-run-config-'));
    for (const [name, text, at] of [
      ['a.toml', 'max_steps = 2\n[__proto__]\ncheckpoint_every = 1\n', '__proto__'],
      ['b.toml', '[policy]\nd_model = 8\n[policy.__proto__]\nlayers = 9\n', 'policy.__proto__'],
      ['c.json', '{"trainer": {"__proto__": {"lr": 1}}}', 'trainer.__proto__'],
    ] as const) {
      const path = join(dir, name);
      writeFileSync(path, text);
      const error = await readRunConfigFile(path).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunConfigError);
      expect((error as Error).message).toBe(
        `${path}: ${at}: a "__proto__" key is refused (it would set a prototype, not a field)`,
      );
    }
  });
});
