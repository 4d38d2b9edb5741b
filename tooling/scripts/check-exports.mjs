#!/usr/bin/env node
// The public names of every package, reviewed. For each workspace package with an `exports` map,
// lists the names each entry point exports (its `@troupe/source` file, read with the TypeScript
// checker, so `export *` chains are followed) and compares them with the committed snapshot
// `tooling/exports-snapshot.json`. Any added or removed name fails (exit 1) with one line per
// name, so growth of a public surface is a reviewed change. An entry file with `export *` fails too.
// Usage: node tooling/scripts/check-exports.mjs            check against the snapshot
//        node tooling/scripts/check-exports.mjs --update   rewrite the snapshot (commit it)
//        node tooling/scripts/check-exports.mjs --counts   print names per entry point
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const ts = createRequire(join(repo, 'package.json'))('typescript');
const snapshotFile = join(repo, 'tooling/exports-snapshot.json');

const manifests = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*package.json'], {
  cwd: repo,
  encoding: 'utf8',
})
  .split('\n')
  .filter((file) => file && !file.includes('node_modules/') && !file.includes('/dist/'));

/** Entry points: `{ key: "@troupe/verifiers/testing", file }` for every `exports` entry with a source file. */
function entryPoints() {
  const entries = [];
  for (const file of manifests) {
    let pkg;
    try {
      pkg = JSON.parse(readFileSync(join(repo, file), 'utf8'));
    } catch {
      continue;
    }
    if (!pkg.exports || typeof pkg.exports !== 'object') continue;
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const source = typeof target === 'object' && target !== null ? target['@troupe/source'] : undefined;
      if (typeof source !== 'string' || !/\.[mc]?tsx?$/.test(source)) continue;
      entries.push({
        key: subpath === '.' ? pkg.name : `${pkg.name}${subpath.slice(1)}`,
        file: join(repo, dirname(file), source),
      });
    }
  }
  return entries.sort((a, b) => a.key.localeCompare(b.key));
}

function exportedNames(entries) {
  const program = ts.createProgram(
    entries.map((entry) => entry.file),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      customConditions: ['@troupe/source'],
      noEmit: true,
      skipLibCheck: true,
      resolveJsonModule: true,
      types: [],
      noResolve: false,
    },
  );
  const checker = program.getTypeChecker();
  const result = {};
  for (const entry of entries) {
    const source = program.getSourceFile(entry.file);
    const symbol = source && checker.getSymbolAtLocation(source);
    if (!symbol) throw new Error(`check-exports: cannot read ${entry.file}`);
    result[entry.key] = checker
      .getExportsOfModule(symbol)
      .map((s) => s.getName())
      .sort();
  }
  return result;
}

const entries = entryPoints();
const current = exportedNames(entries);
const mode = process.argv[2];
if (mode === '--update') {
  writeFileSync(snapshotFile, `${JSON.stringify(current, null, 2)}\n`);
  process.stdout.write(`check-exports: wrote ${Object.keys(current).length} entry points to tooling/exports-snapshot.json\n`);
  process.exit(0);
}
if (mode === '--counts') {
  for (const [key, names] of Object.entries(current)) process.stdout.write(`${String(names.length).padStart(5)}  ${key}\n`);
  process.exit(0);
}
const snapshot = JSON.parse(readFileSync(snapshotFile, 'utf8'));
const findings = [];
// An entry point lists its names: `export *` would make a public name of whatever a module adds.
for (const entry of entries) {
  if (/^\s*export\s+\*\s+from/m.test(readFileSync(entry.file, 'utf8')))
    findings.push(`${entry.key}: \`export *\` in its entry file (list the names)`);
}
for (const key of new Set([...Object.keys(snapshot), ...Object.keys(current)])) {
  const before = new Set(snapshot[key] ?? []);
  const now = new Set(current[key] ?? []);
  if (!(key in current)) findings.push(`${key}: entry point removed`);
  if (!(key in snapshot)) findings.push(`${key}: new entry point`);
  for (const name of now) if (!before.has(name)) findings.push(`${key}: + ${name}`);
  for (const name of before) if (!now.has(name)) findings.push(`${key}: - ${name}`);
}
if (findings.length > 0) {
  process.stderr.write(
    `check-exports: ${findings.length} unreviewed change(s) to the public names:\n${findings.join('\n')}\n` +
      'If they are intended, run `node tooling/scripts/check-exports.mjs --update` and commit tooling/exports-snapshot.json.\n',
  );
  process.exit(1);
}
process.stdout.write(`check-exports: ${Object.keys(current).length} entry points match tooling/exports-snapshot.json\n`);
