/**
 * `pnpm new:harness <id>`: creates `packages/harnesses/<kebab-id>/` (`@troupe/harness-<kebab-id>`)
 * from the same templates as `troupe init harness` (packages/verifiers/templates), in its
 * workspace layout (`troupe init harness <id> --workspace`). Then run `pnpm install` and fill in
 * the install script and launch plan.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const id = process.argv[2];
if (!id || !/^[a-z][a-z0-9_]*$/.test(id)) {
  process.stderr.write('usage: pnpm new:harness <id>   (snake_case, e.g. my_agent)\n');
  process.exit(2);
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = join('packages', 'harnesses', id.replace(/_/g, '-'));
// This script runs under tsx with the source condition: the CLI runs from the verifiers sources.
const result = spawnSync(
  process.execPath,
  [...process.execArgv, join(root, 'packages/verifiers/src/cli/main.ts'), 'init', 'harness', id, '--dir', dir, '--workspace'],
  { cwd: root, stdio: 'inherit' },
);
if (result.status === 0) process.stdout.write('see docs/contributing-a-harness.md\n');
process.exit(result.status ?? 1);
