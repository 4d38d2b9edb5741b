#!/usr/bin/env node
// Lists the exports of every public package's entry points (its package.json `exports`, read
// from the sources its `@troupe/source` condition names) that carry no JSDoc comment, and exits 1
// when there is any, or when an entry point it should read is missing or not a module (so a broken
// `exports` map cannot pass by being skipped). `.ci/run` runs it beside check-walls.
//
//   node tooling/scripts/check-docs.mjs            list undocumented exports, fail on any
//   node tooling/scripts/check-docs.mjs --summary  counts per package only
//
// A re-export (`export { x } from`) is judged at its declaration; an export declared in another
// package is that package's to document.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '../..');
const summaryOnly = process.argv.includes('--summary');

function packageDirs() {
  const dirs = [];
  const walk = (dir, depth) => {
    if (existsSync(join(dir, 'package.json')) && depth > 0) {
      dirs.push(dir);
      return;
    }
    if (depth > 2) return;
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.'))
        walk(join(dir, entry.name), depth + 1);
  };
  walk(join(root, 'packages'), 0);
  walk(join(root, 'apps'), 0);
  return dirs;
}

function entryTypes(pkg, dir) {
  const files = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    if (subpath === './package.json' || typeof target !== 'object') continue;
    const source = target['@troupe/source'];
    if (source) files.push(resolve(dir, source));
  }
  return files;
}

/** The declaration's JSDoc (or a leading /** comment), walking up to the statement for variables. */
function hasDoc(declaration) {
  let node = declaration;
  for (let hops = 0; node && hops < 4; hops++, node = node.parent) {
    if (ts.getJSDocCommentsAndTags(node).length > 0) return true;
    const text = node.getSourceFile?.().getFullText();
    if (text) {
      const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
      if (ranges.some((r) => text.slice(r.pos, r.pos + 3) === '/**')) return true;
    }
    if (ts.isSourceFile(node) || ts.isStatement(node)) break;
  }
  return false;
}

let total = 0;
let unreadableTotal = 0;
const report = [];
for (const dir of packageDirs()) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (pkg.private) continue;
  const entries = entryTypes(pkg, dir);
  const unreadable = new Set(
    entries.filter((file) => !existsSync(file)).map((file) => `${file.slice(root.length + 1)} (missing)`),
  );
  if (entries.length === 0) continue;
  const program = ts.createProgram(
    entries.filter((file) => existsSync(file)),
    {
      noEmit: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      customConditions: ['@troupe/source'],
    },
  );
  const checker = program.getTypeChecker();
  const missing = new Set();
  for (const entry of entries) {
    if (!existsSync(entry)) continue;
    const source = program.getSourceFile(entry);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) {
      unreadable.add(`${entry.slice(root.length + 1)} (not a module)`);
      continue;
    }
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declarations = symbol.declarations ?? [];
      if (declarations.length === 0) continue;
      if (declarations.some((d) => !d.getSourceFile().fileName.startsWith(dir))) continue; // re-exported from another package
      if (declarations.some(hasDoc)) continue;
      const d = declarations[0];
      const file = d.getSourceFile();
      const { line } = file.getLineAndCharacterOfPosition(d.getStart());
      missing.add(`${file.fileName.slice(root.length + 1)}:${line + 1} ${exported.name}`);
    }
  }
  total += missing.size;
  unreadableTotal += unreadable.size;
  report.push({ name: pkg.name, missing: [...missing].sort(), unreadable: [...unreadable].sort() });
}
for (const { name, missing, unreadable } of report) {
  for (const entry of unreadable) console.log(`${name}: entry point ${entry}`);
  if (missing.length === 0) continue;
  console.log(`${name}: ${missing.length} undocumented export(s)`);
  if (!summaryOnly) for (const line of missing) console.log(`  ${line}`);
}
if (unreadableTotal > 0) console.log(`check-docs: ${unreadableTotal} entry point(s) could not be read`);
console.log(total === 0 ? 'check-docs: every public export is documented' : `check-docs: ${total} undocumented public export(s)`);
process.exitCode = total === 0 && unreadableTotal === 0 ? 0 : 1;
