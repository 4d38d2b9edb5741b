import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';
import { INIT_HELP, scaffoldPackage } from './init-command.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), cli, ...args], {
    cwd,
    env: { ...process.env, OPENAI_API_KEY: 'x' },
  });
}

// Scaffolds that build, load by id and run (the harness on @troupe/program-kit) are tested in
// tests/integration (init-scaffolds.integration.test.ts): the core's tests load no plugin package.
describe('troupe init', () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'troupe-init-'));
  });

  it.each(['env', 'harness', 'runtime'] as const)('scaffolds a standalone %s package', (kind) => {
    const made = scaffoldPackage({ kind, name: 'my-probe', dir: join(work, `files-${kind}`) });
    expect(made.packageName).toBe(`@troupe/${kind}-my-probe`);
    expect(made.id).toBe(kind === 'env' ? 'my-probe' : 'my_probe');
    expect(made.files).toEqual(
      [
        '.gitignore',
        'README.md',
        'package.json',
        'src/index.ts',
        `src/my-probe-${kind}.test.ts`,
        `src/my-probe-${kind}.ts`,
        'tsconfig.json',
      ].sort(),
    );
    const pkg = JSON.parse(readFileSync(join(made.dir, 'package.json'), 'utf8'));
    const version = JSON.parse(readFileSync(join(root, 'packages/verifiers/package.json'), 'utf8')).version;
    expect(pkg.type).toBe('module');
    expect(pkg.dependencies['@troupe/verifiers']).toBe(`^${version}`);
    if (kind === 'harness') expect(pkg.dependencies['@troupe/program-kit']).toBe(`^${version}`);
    expect(Object.values(pkg.dependencies).some((range) => String(range).startsWith('workspace:'))).toBe(false);
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js', default: './dist/index.js' });
    expect(Object.keys(pkg.scripts)).toEqual(['build', 'test']);
    const test = readFileSync(join(made.dir, `src/my-probe-${kind}.test.ts`), 'utf8');
    expect(test).toContain(kind === 'runtime' ? '@troupe/verifiers/conformance' : '@troupe/verifiers/testing');
    for (const file of made.files) expect(readFileSync(join(made.dir, file), 'utf8')).not.toMatch(/__[A-Z]+__/);
  });

  it('scaffolds an isolated-verifier env with --template, and refuses an unknown template naming the choices', () => {
    const made = scaffoldPackage({ kind: 'env', name: 'graded', dir: join(work, 'isolated'), template: 'isolated-verifier' });
    expect(made.files).toContain('src/graded-env.ts');
    const source = readFileSync(join(made.dir, 'src/graded-env.ts'), 'utf8');
    expect(source).toContain('createIsolatedVerifierEnv');
    expect(source).toContain("id: 'graded'");
    expect(readFileSync(join(made.dir, 'src/graded-env.test.ts'), 'utf8')).toContain('rewards.verifier');
    expect(() => scaffoldPackage({ kind: 'env', name: 'x', dir: join(work, 'bad-template'), template: 'nope' })).toThrow(
      /unknown --template "nope" \(expected isolated-verifier\)/,
    );
    expect(() =>
      scaffoldPackage({ kind: 'runtime', name: 'x', dir: join(work, 'bad-kind'), template: 'isolated-verifier' }),
    ).toThrow(/runtime has none/);
  });

  it('lays a package out for the monorepo with --workspace', () => {
    const dir = join(work, 'repo/packages/harnesses/my-probe');
    mkdirSync(join(work, 'repo'), { recursive: true });
    writeFileSync(join(work, 'repo/LICENSE'), 'L\n');
    const made = scaffoldPackage({ kind: 'harness', name: 'my_probe', dir, workspaceRoot: join(work, 'repo') });
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg.dependencies).toEqual({ '@troupe/program-kit': 'workspace:*', '@troupe/verifiers': 'workspace:*' });
    expect(pkg.exports['.']['@troupe/source']).toBe('./src/index.ts');
    expect(readFileSync(join(dir, 'tsconfig.json'), 'utf8')).toContain('"../../../tooling/tsconfig/base.json"');
    expect(made.files).toContain('LICENSE');
    expect(made.files).not.toContain('.gitignore');
  });

  it('refuses a non-empty directory naming it, a bad name and an unknown kind (exit 2)', async () => {
    const taken = join(work, 'taken');
    mkdirSync(taken);
    writeFileSync(join(taken, 'keep.txt'), 'x');
    const busy = await run(['init', 'env', 'fine', '--dir', taken], work);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`${taken} exists and is not empty`);
    expect(readdirSync(taken)).toEqual(['keep.txt']);
    const bad = await run(['init', 'harness', 'My Agent!', '--dir', join(work, 'bad')], work);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bad name "My Agent!"');
    expect(existsSync(join(work, 'bad'))).toBe(false);
    const kind = await run(['init', 'widget', 'x'], work);
    expect(kind.code).toBe(2);
    expect(kind.stderr).toContain('unknown kind "widget"');
  }, 60_000);

  it('--help shows every option', async () => {
    const help = await run(['init', '--help'], work);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(INIT_HELP);
    for (const option of ['-d, --dir D', '--workspace', '-h, --help', 'env', 'harness', 'runtime'])
      expect(help.stdout).toContain(option);
  }, 60_000);
});
