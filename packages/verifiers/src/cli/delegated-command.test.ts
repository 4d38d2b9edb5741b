import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/troupe-error.ts';
import { runNode } from '../testing/node-process.ts';
import { delegatedCommand } from './trainer-command.ts';

// `troupe view`, `troupe train` & co. are commands of other packages (@troupe/viewer,
// @troupe/trainer): the core finds the package installed in the user's project by name and runs
// its bin, or names the package to install. The real packages run behind it in the consumer test.

const cli = resolve(import.meta.dirname, 'main.ts');
// tsx by path: the project folder the CLI runs in has no node_modules of its own.
const tsx = createRequire(import.meta.url).resolve('tsx');
const troupeIn = (cwd: string, args: string[]) => runNode(['--import', tsx, cli, ...args], { cwd });

/** A project folder whose node_modules holds `pkg` with a bin that reports its arguments and exits 7. */
function projectWith(pkg: string, bin: string): string {
  const project = mkdtempSync(join(tmpdir(), 'troupe-delegated-'));
  const dir = join(project, 'node_modules', ...pkg.split('/'));
  mkdirSync(join(dir, 'bin'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: pkg, version: '0.0.0', bin: { [bin]: './bin/cli.js' } }));
  writeFileSync(join(dir, 'bin', 'cli.js'), 'console.log(JSON.stringify(process.argv.slice(2)));\nprocess.exitCode = 7;\n');
  chmodSync(join(dir, 'bin', 'cli.js'), 0o755);
  return project;
}

describe('commands of other packages', () => {
  it('names @troupe/viewer when `troupe view` runs where it is not installed (a ConfigError: exit 2)', async () => {
    // This repository links @troupe/viewer at its root, so the lookup is given a bare project folder
    // only; the packed-tarball consumer test runs the same case through the real bin.
    const project = mkdtempSync(join(tmpdir(), 'troupe-no-viewer-'));
    const error = await delegatedCommand('view', ['some-run'], [project]).catch((caught: unknown) => caught);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      '`troupe view` is a command of @troupe/viewer, which is not installed here: npm install @troupe/viewer',
    );
  });

  it("runs the installed @troupe/viewer's bin with `view` and its arguments, passing its exit code", async () => {
    const project = projectWith('@troupe/viewer', 'troupe-viewer');
    const result = await troupeIn(project, ['view', 'runs/a', '--html', 'a.html']);
    expect(JSON.parse(result.stdout.trim())).toEqual(['view', 'runs/a', '--html', 'a.html']);
    expect(result.code).toBe(7);
  });

  it('lists where to get `troupe view` in --help', async () => {
    const result = await troupeIn(mkdtempSync(join(tmpdir(), 'troupe-help-')), ['--help']);
    expect(result.stdout).toMatch(/troupe view <run-dir>[\s\S]*npm install @troupe\/viewer/);
  });
});
