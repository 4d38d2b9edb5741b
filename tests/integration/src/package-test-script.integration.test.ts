import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../../..');
const vitest = join(repo, 'node_modules/.bin/vitest');

describe("a package's own test script", () => {
  it.each(['packages/runtimes/prime', 'packages/harnesses/pi'])(
    'run from %s, collects that package’s tests and only those',
    (folder) => {
      // What `pnpm --filter <pkg> test` runs: vitest started in the package's folder.
      const result = spawnSync(vitest, ['list', '--project', 'unit', '--project', 'integration', '--filesOnly'], {
        cwd: join(repo, folder),
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(result.status, result.stderr).toBe(0);
      const files = result.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line.endsWith('.test.ts'));
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        expect(file.replace(/^\[(unit|integration)\]\s*/, '')).toMatch(new RegExp(`^(${folder}/)?src/`));
      }
    },
  );
});
