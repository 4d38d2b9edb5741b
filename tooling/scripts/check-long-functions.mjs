#!/usr/bin/env node
// Long functions. Lists every function, method or arrow in packages/**/src and apps/*/src (tests
// and __fixtures__ aside) whose body is longer than the limit (default 60 lines), longest first,
// with `(reason given)` when its body's first line, or an enclosing function's, is a
// `// Long: <why>` comment (a suite of cases, a parser of closures, a table). Exits 1 when one has no reason and `--strict` is given;
// otherwise it only reports (issue 19: split them along their seams, or say why not).
// Usage: node tooling/scripts/check-long-functions.mjs [--limit 60] [--strict]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const ts = createRequire(resolve(repo, 'package.json'))('typescript');
const args = process.argv.slice(2);
const limitAt = args.indexOf('--limit');
const limit = limitAt >= 0 ? Number(args[limitAt + 1]) : 60;
if (!Number.isInteger(limit) || limit < 1) {
  console.error(`check-long-functions: --limit must be a positive whole number of lines, got ${args[limitAt + 1]}`);
  process.exit(2);
}
const strict = args.includes('--strict');

const files = execFileSync(
  'git',
  ['ls-files', '--cached', '--others', '--exclude-standard', 'packages/**/src/**/*.ts', 'apps/*/src/**/*.ts'],
  {
    cwd: repo,
    encoding: 'utf8',
  },
)
  .split('\n')
  .filter((file) => file && !file.endsWith('.test.ts') && !file.includes('__fixtures__'));

const rows = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(resolve(repo, file), 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (position) => source.getLineAndCharacterOfPosition(position).line;
  const nameOf = (node) => {
    if (node.name) return node.name.getText(source);
    const parent = node.parent;
    if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) return parent.name.getText(source);
    return '<anonymous>';
  };
  const visit = (node, owner, explained) => {
    if (ts.isFunctionLike(node) && node.body && ts.isBlock(node.body)) {
      const start = line(node.body.getStart(source));
      const lines = line(node.body.getEnd()) - start + 1;
      const name = owner ? `${owner}.${nameOf(node)}` : nameOf(node);
      const reason = explained || (text.split('\n')[start + 1]?.trim() ?? '').startsWith('// Long:');
      if (lines > limit) rows.push({ lines, where: `${file}:${start + 1}`, name, reason });
      ts.forEachChild(node, (child) => visit(child, name, reason));
      return;
    }
    const cls = ts.isClassDeclaration(node) && node.name ? node.name.getText(source) : owner;
    ts.forEachChild(node, (child) => visit(child, cls, explained));
  };
  visit(source, undefined, false);
}

rows.sort((a, b) => b.lines - a.lines);
for (const row of rows)
  console.log(`${String(row.lines).padStart(4)} ${row.where} ${row.name}${row.reason ? ' (reason given)' : ''}`);
const unexplained = rows.filter((row) => !row.reason).length;
console.log(`check-long-functions: ${rows.length} function(s) over ${limit} lines, ${unexplained} without a reason`);
if (strict && unexplained > 0) process.exit(1);
