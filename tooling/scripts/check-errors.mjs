#!/usr/bin/env node
// One error vocabulary: a package's `src` throws troupe's error kinds (`TroupeError` and its
// subclasses, docs/errors.md), never a bare `Error`, `RangeError` or `TypeError`, and declares no
// error class on `Error` directly. The exception (an assertion that only a bug in troupe can trip,
// or a contract a caller tests by class, such as fetch's `TypeError`) carries the marker comment
// `// bare-error: <why>` on its line or on the line above (a class: or as the first line of its body).
//
//   node tooling/scripts/check-errors.mjs           fails (exit 1) listing each bare error
//   node tooling/scripts/check-errors.mjs --count   per package: error classes thrown, bare throws
//   --root DIR                                       checks another tree (the script's own test)
//
// Scanned: every `src/` beside a package.json under packages/ and apps/, without tests
// (`*.test.ts`), fixtures (`__fixtures__/`), declarations and generated code.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const rootAt = process.argv.indexOf('--root');
const root = rootAt === -1 ? join(import.meta.dirname, '..', '..') : process.argv[rootAt + 1];
const MARKER = /\/\/\s*bare-error:\s*\S/;
const BARE = /(?<![\w.$])(?:new\s+)?(Error|RangeError|TypeError)\s*\(/;
const BARE_CLASS = /\bclass\s+\w+\s+extends\s+(Error|RangeError|TypeError)\b/;
const THROWN = /\bthrow\s+new\s+([A-Z]\w*)\b/g;

/** Package folders (a package.json beside a src/), two levels deep under packages/ and apps/. */
function packages() {
  const found = [];
  const visit = (dir, depth) => {
    if (!existsSync(dir)) return;
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'src'))) found.push(dir);
    if (depth === 0) return;
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.'))
        visit(join(dir, entry.name), depth - 1);
  };
  visit(join(root, 'packages'), 2);
  visit(join(root, 'apps'), 2);
  return found.sort();
}

function sources(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== '__fixtures__' && entry.name !== 'node_modules') out.push(...sources(path));
    } else if (/\.(m|c)?[jt]sx?$/.test(entry.name) && !/\.test\.[jt]sx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      out.push(path);
    }
  }
  return out;
}

/** A comment line (`//`, `/*`, ` * `) holds no code. */
const isComment = (line) => /^\s*(\/\/|\/\*|\*)/.test(line);

function scan(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const bare = [];
  const thrown = new Set();
  lines.forEach((line, i) => {
    if (isComment(line)) return;
    for (const match of line.matchAll(THROWN)) thrown.add(match[1]);
    if (!BARE.test(line) && !BARE_CLASS.test(line)) return;
    if (MARKER.test(line) || MARKER.test(lines[i - 1] ?? '')) return;
    // A class keeps its JSDoc right above it: its marker may open the class body instead.
    if (BARE_CLASS.test(line) && MARKER.test(lines[i + 1] ?? '')) return;
    bare.push({ line: i + 1, text: line.trim() });
  });
  return { bare, thrown };
}

const counting = process.argv.includes('--count');
let failures = 0;
const rows = [];
for (const dir of packages()) {
  const name = relative(root, dir);
  const classes = new Set();
  let bareCount = 0;
  for (const file of sources(join(dir, 'src'))) {
    if (!statSync(file).isFile()) continue;
    const { bare, thrown } = scan(file);
    for (const kind of thrown) classes.add(kind);
    bareCount += bare.length;
    if (!counting)
      for (const hit of bare) {
        failures++;
        console.error(`${relative(root, file)}:${hit.line}: a bare error: ${hit.text.slice(0, 120)}`);
      }
  }
  rows.push({ package: name, classes: [...classes].sort(), bare: bareCount });
}

if (counting) {
  for (const row of rows)
    if (row.classes.length || row.bare)
      console.log(`${row.package}: ${row.bare} bare; throws ${row.classes.length} kinds (${row.classes.join(', ')})`);
} else if (failures > 0) {
  console.error(
    `check-errors: ${failures} bare error(s). Throw a TroupeError kind (ConfigError with { path }, WireError, TrainerError, EngineError, …; docs/errors.md), or mark an assertion that only a bug can trip with \`// bare-error: <why>\`.`,
  );
  process.exit(1);
} else {
  console.log(`check-errors: ${rows.length} packages, no bare errors`);
}
