#!/usr/bin/env node
// The public types as a user's compiler sees them. Imports every entry point (`exports` key) of
// every public workspace package from its built `dist` declarations, and type-checks that one file
// with the options of a strict Node project: strict, skipLibCheck false, lib ES2022 (no DOM),
// types ["node"], module NodeNext. Any error — in our declarations or in a dependency's that our
// declarations reach (tfjs's and some SDKs' need DOM types) — fails (exit 1), one line per error.
// The packages resolve through a temporary node_modules of links to the workspace packages, so each
// dependency resolves from its package as it would when installed. A workspace sees devDependencies
// and hoisted @types a user's install lacks, so it also checks each bare import of our declarations:
// a dependency or peer of the package, and typed (its own types, or its @types package a dependency
// too). The consumer test runs the whole check on the packed tarballs installed with npm
// (tooling/consumer/public-types.mjs), which also sees what the dependencies' own declarations need.
// Usage: node tooling/scripts/check-public-types.mjs   (after `pnpm build`)
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const require = createRequire(join(repo, 'package.json'));
const ts = require('typescript');

/** The public workspace packages: `{ name, dir, entries }`, entries the import specifiers of their exports. */
function publicPackages() {
  const packages = [];
  for (const base of ['packages', 'packages/harnesses', 'packages/runtimes', 'apps']) {
    for (const name of readdirSync(join(repo, base))) {
      const dir = join(repo, base, name);
      if (!existsSync(join(dir, 'package.json'))) continue;
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.private || !pkg.exports) continue;
      const keys = typeof pkg.exports === 'string' ? ['.'] : Object.keys(pkg.exports);
      const entries = keys
        .filter((key) => !key.endsWith('.json'))
        .map((key) => (key === '.' ? pkg.name : `${pkg.name}${key.slice(1)}`));
      packages.push({ name: pkg.name, dir, entries, manifest: pkg });
    }
  }
  return packages;
}

/** Whether package `name`, installed for the package at `from`, ships its own declarations. */
function shipsTypes(name, from) {
  for (const base of [join(from, 'node_modules'), join(repo, 'node_modules')]) {
    const manifestFile = join(base, name, 'package.json');
    if (!existsSync(manifestFile)) continue;
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
    if (manifest.types || manifest.typings || JSON.stringify(manifest.exports ?? {}).includes('"types"')) return true;
    return existsSync(join(base, name, 'index.d.ts'));
  }
  return true; // not installed here: tsc reports it
}

/** Bare imports of our declarations a user's install would not type: not declared, or untyped without its @types. */
function undeclaredTypeImports(program, packages) {
  const problems = [];
  for (const file of program.getSourceFiles()) {
    const pkg = packages.find((each) => file.fileName.startsWith(`${each.dir}/dist/`));
    if (!pkg) continue;
    const declared = { ...pkg.manifest.dependencies, ...pkg.manifest.peerDependencies };
    for (const { fileName: spec } of ts.preProcessFile(file.text, true, true).importedFiles) {
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      const name = spec
        .split('/')
        .slice(0, spec.startsWith('@') ? 2 : 1)
        .join('/');
      if (name === pkg.name) continue;
      const where = `${pkg.name}: ${file.fileName.slice(pkg.dir.length + 1)}`;
      if (!(name in declared)) problems.push(`${where} names ${name}, which is not in its dependencies or peerDependencies`);
      else if (!shipsTypes(name, pkg.dir)) {
        const types = `@types/${name.replace(/^@/, '').replace('/', '__')}`;
        if (!(types in declared)) problems.push(`${where} names ${name}, which ships no types, and ${types} is not a dependency`);
      }
    }
  }
  return [...new Set(problems)];
}

const packages = publicPackages();
const work = mkdtempSync(join(tmpdir(), 'troupe-public-types-'));
try {
  for (const pkg of packages) {
    mkdirSync(dirname(join(work, 'node_modules', pkg.name)), { recursive: true });
    symlinkSync(pkg.dir, join(work, 'node_modules', pkg.name), 'dir');
  }
  mkdirSync(join(work, 'node_modules/@types'), { recursive: true });
  symlinkSync(dirname(require.resolve('@types/node/package.json')), join(work, 'node_modules/@types/node'), 'dir');
  writeFileSync(join(work, 'package.json'), '{"type":"module","private":true}\n');
  const entries = packages.flatMap((pkg) => pkg.entries);
  const lines = entries.map((entry, i) => `import * as m${i} from ${JSON.stringify(entry)};\nexport { m${i} };`);
  writeFileSync(join(work, 'public.ts'), `${lines.join('\n')}\n`);

  const options = {
    strict: true,
    skipLibCheck: false,
    lib: ['lib.es2022.d.ts'],
    types: ['node'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
  };
  const program = ts.createProgram([join(work, 'public.ts')], options);
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const undeclared = undeclaredTypeImports(program, packages);
  for (const problem of undeclared) console.error(problem);
  for (const d of diagnostics) {
    const where = d.file
      ? `${d.file.fileName.replace(/.*\/node_modules\//, '').replace(`${work}/`, '')}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : '';
    console.error(`${where} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
  }
  if (diagnostics.length > 0 || undeclared.length > 0) {
    console.error(
      `public types: ${diagnostics.length} error(s) under tsc --strict without skipLibCheck (lib ES2022, types node), ${undeclared.length} import(s) a user's install would not type`,
    );
    process.exitCode = 1;
  } else {
    console.log(
      `public types: ${entries.length} entry points of ${packages.length} packages type-check under tsc --strict, skipLibCheck false, lib ES2022, types node`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
