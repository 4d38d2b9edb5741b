#!/usr/bin/env node
// Walls between packages. Fails (exit 1, one line per finding) when
//  1. a relative import leaves the package that contains the importing file (import other
//     workspace packages by name, through their `exports`);
//  2. a file imports a package its package.json does not declare (dependencies, devDependencies,
//     peerDependencies or optionalDependencies; `node:` built-ins aside);
//  3. a file of a core package (@troupe/verifiers, @troupe/prime-rl) — its sources, tests, test
//     support, benches and fixtures — imports a plugin package (@troupe/harness-*, runtime-*,
//     env-*, viewer) or an app, or names another package's folder in a path string (a test that spawns
//     `apps/trainer/src/cli.ts`, or `new URL('../../runtimes/docker/src/index.ts', …)`). Tests
//     that need both sides live in the plugin, the app, or tests/integration.
// Usage: node tooling/scripts/check-walls.mjs  (from anywhere).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.mts', '*.js', '*.mjs'], {
  cwd: repo,
  encoding: 'utf8',
})
  .split('\n')
  .filter((file) => file && !file.includes('node_modules/') && !file.includes('/dist/') && existsSync(join(repo, file)));

const roots = new Map();
function packageRoot(dir) {
  if (roots.has(dir)) return roots.get(dir);
  const root = existsSync(join(dir, 'package.json')) || dir === repo ? dir : packageRoot(dirname(dir));
  roots.set(dir, root);
  return root;
}

const manifests = new Map();
function manifest(root) {
  if (!manifests.has(root)) manifests.set(root, JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
  return manifests.get(root);
}
function declared(root) {
  const pkg = manifest(root);
  return new Set([
    pkg.name,
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.devDependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
    ...Object.keys(pkg.optionalDependencies ?? {}),
  ]);
}

const corePackages = new Set(['@troupe/verifiers', '@troupe/prime-rl']);
const apps = new Set(
  execFileSync('git', ['ls-files', 'apps/*/package.json'], { cwd: repo, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((file) => manifest(join(repo, dirname(file))).name),
);
const isPluginOrApp = (name) => /^@troupe\/(harness|runtime|env)-|^@troupe\/viewer$/.test(name) || apps.has(name);

const builtins = new Set(builtinModules);
const relativeImport = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]*)['"]/g;
const bareImport = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^'".\s/][^'"\s]*)['"]/g;
// Path strings in core files: relative ones (`'../../runtimes/docker/src'`) and repo-rooted ones
// (`join(root, 'apps/trainer/src/cli.ts')`).
const relativePath = /['"`](\.{1,2}\/[^'"`$\s]*)['"`]/g;
const rootedPath = /['"`]((?:apps|packages|tooling)\/[^'"`$\s]*)['"`]/g;

const packageName = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
const lineOf = (text, index) => text.slice(0, index).split('\n').length;

const findings = [];
for (const file of files) {
  const absolute = join(repo, file);
  const home = packageRoot(dirname(absolute));
  const homeName = relative(repo, home) || '(root)';
  const text = readFileSync(absolute, 'utf8');
  const core = home !== repo && corePackages.has(manifest(home).name);

  for (const match of text.matchAll(relativeImport)) {
    const target = resolve(dirname(absolute), match[1]);
    const rel = relative(home, target);
    if (rel.startsWith('..') || packageRoot(dirname(target)) !== home) {
      findings.push(`${file}:${lineOf(text, match.index)}: ${match[1]} leaves ${homeName}`);
    }
  }

  const known = declared(home);
  for (const match of text.matchAll(bareImport)) {
    const specifier = match[1];
    if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
    const name = packageName(specifier);
    if (!known.has(name)) {
      findings.push(`${file}:${lineOf(text, match.index)}: imports ${name}, not declared in ${homeName}/package.json`);
    }
    if (core && isPluginOrApp(name)) {
      findings.push(`${file}:${lineOf(text, match.index)}: core package ${homeName} imports ${name} (a plugin or an app)`);
    }
  }

  if (!core) continue;
  const otherPackage = (target) => {
    if (target.split(/[\\/]/).includes('node_modules')) return undefined;
    const root = packageRoot(existsSync(target) ? target : dirname(target));
    return root !== repo && root !== home ? root : undefined;
  };
  for (const match of text.matchAll(relativePath)) {
    const other = otherPackage(resolve(dirname(absolute), match[1]));
    if (other)
      findings.push(`${file}:${lineOf(text, match.index)}: core package ${homeName} names ${relative(repo, other)} by path`);
  }
  for (const match of text.matchAll(rootedPath)) {
    const target = join(repo, match[1]);
    if (!existsSync(target) && !existsSync(dirname(target))) continue;
    const other = otherPackage(target);
    if (other)
      findings.push(`${file}:${lineOf(text, match.index)}: core package ${homeName} names ${relative(repo, other)} by path`);
  }
}
if (findings.length > 0) {
  process.stderr.write(`check-walls: ${findings.length} finding(s):\n${findings.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(
  `check-walls: ${files.length} files; no relative import crosses a package root, every imported package is declared, the core names no plugin or app\n`,
);
