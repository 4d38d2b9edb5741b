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
//     that need both sides live in the plugin, the app, or tests/integration;
//  4. an import of a workspace package names a subpath its package.json `exports` does not list
//     (`@troupe/verifiers/src/env/env.ts`): packages are used through their exports only;
//  5. the shipped code (`src/`, tests, fixtures and test support aside) of the core packages and the
//     trainer app names a showcase env that lives in a package of its own (`packages/env-<id>`:
//     the words of each id, e.g. `kuhn` and `poker` for env-kuhn-poker). Which env a job runs is
//     data (a run config, a package.json field, a dependency), never code. Tests, benches,
//     experiments and configs may name it: they are the showcase's users, not the machinery.
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
// Workspace packages by name, with their `exports` keys (rule 4).
const workspaceExports = new Map(
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*package.json'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file && !file.includes('node_modules/') && existsSync(join(repo, file)))
    .map((file) => manifest(join(repo, dirname(file))))
    .filter((pkg) => typeof pkg.name === 'string' && pkg.name.startsWith('@troupe/'))
    .map((pkg) => [
      pkg.name,
      pkg.exports === undefined ? null : new Set(Object.keys(typeof pkg.exports === 'string' ? { '.': 1 } : pkg.exports)),
    ]),
);
// Rule 5: the words of each showcase env id (`packages/env-<id>`), and where they may not appear.
const showcaseWords = [
  ...new Set(
    execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'packages/env-*/package.json'], {
      cwd: repo,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean)
      .flatMap(
        (file) =>
          manifest(join(repo, dirname(file)))
            .name.replace(/^@troupe\/env-/, '')
            .match(/[a-z]{4,}/g) ?? [],
      ),
  ),
];
const showcasePattern = showcaseWords.length ? new RegExp(`(${showcaseWords.join('|')})`, 'i') : null;
const gameFree = ['packages/verifiers/src/', 'packages/prime-rl/src/', 'apps/trainer/src/'];
const isShippedSource = (file) =>
  gameFree.some((prefix) => file.startsWith(prefix)) && !/\.test\.ts$|\.bench\.ts$|\/__fixtures__\/|\/testing\//.test(file);

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
    const exportsOf = workspaceExports.get(name);
    const subpath = `.${specifier.slice(name.length)}`;
    if (exportsOf && !exportsOf.has(subpath)) {
      findings.push(`${file}:${lineOf(text, match.index)}: imports ${specifier}, not in the exports of ${name}`);
    }
    if (core && isPluginOrApp(name)) {
      findings.push(`${file}:${lineOf(text, match.index)}: core package ${homeName} imports ${name} (a plugin or an app)`);
    }
  }

  if (showcasePattern && isShippedSource(file)) {
    text.split('\n').forEach((line, i) => {
      const hit = line.match(showcasePattern);
      if (hit)
        findings.push(
          `${file}:${i + 1}: names the showcase env ${JSON.stringify(hit[1])} (a package of its own; pick it by data)`,
        );
    });
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
  `check-walls: ${files.length} files; no relative import crosses a package root, every imported package is declared, the core names no plugin or app, imports stay within exports, and the core, prime-rl and the trainer's sources name no showcase env (${showcaseWords.join(', ')})\n`,
);
