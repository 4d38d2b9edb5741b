import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..', '..', '..');
const script = join(repo, 'tooling', 'scripts', 'check-errors.mjs');

/** A tree with one package whose sources are `files` (path under src → text). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'troupe-check-errors-'));
  const pkg = join(root, 'packages', 'demo');
  mkdirSync(join(pkg, 'src', '__fixtures__'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), '{"name":"demo"}');
  for (const [path, text] of Object.entries(files)) writeFileSync(join(pkg, 'src', path), text);
  return root;
}

const check = (root: string, ...args: string[]) =>
  spawnSync(process.execPath, [script, '--root', root, ...args], { encoding: 'utf8' });

describe('check-errors (no bare Error/RangeError/TypeError in a package src)', () => {
  it('fails naming the file and line of each bare throw, reject and Error subclass', () => {
    const root = tree({
      'a.ts': [
        "import { ConfigError } from '@troupe/verifiers';",
        "export const f = (n: number) => { if (n < 0) throw new RangeError('n: negative'); };",
        "export const g = () => Promise.reject(new Error('nope'));",
        'export class MyError extends TypeError {}',
        "export const h = () => { throw new ConfigError('x: bad', { path: 'x' }); };",
      ].join('\n'),
    });
    const result = check(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('packages/demo/src/a.ts:2: a bare error');
    expect(result.stderr).toContain('packages/demo/src/a.ts:3: a bare error');
    expect(result.stderr).toContain('packages/demo/src/a.ts:4: a bare error');
    expect(result.stderr).not.toContain('a.ts:5');
    expect(result.stderr).toMatch(/3 bare error\(s\)/);
  });

  it('accepts a throw marked `// bare-error: <why>`, tests, fixtures and comments', () => {
    const root = tree({
      'a.ts': [
        '// bare-error: only a bug in this module can get here',
        "export const f = () => { throw new Error('unreachable'); };",
        "export const g = () => { throw new TypeError('x'); }; // bare-error: fetch's contract",
        "// a comment that says throw new Error('x') is not code",
      ].join('\n'),
      'a.test.ts': "throw new Error('tests may');",
      '__fixtures__/f.ts': "throw new Error('fixtures may');",
    });
    const result = check(root);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('refuses a marker with no reason', () => {
    const root = tree({ 'a.ts': "// bare-error:\nexport const f = () => { throw new Error('x'); };" });
    expect(check(root).status).toBe(1);
  });

  it('counts error kinds and bare throws per package', () => {
    const root = tree({ 'a.ts': "throw new RangeError('a');\nthrow new ConfigError('b');" });
    expect(check(root, '--count').stdout.trim()).toBe('packages/demo: 1 bare; throws 2 kinds (ConfigError, RangeError)');
  });

  it("passes on this repository's packages", () => {
    expect(execFileSync(process.execPath, [script], { encoding: 'utf8' })).toMatch(/no bare errors/);
  });
});
