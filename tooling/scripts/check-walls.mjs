#!/usr/bin/env node
// Walls between packages: fails when a relative import leaves the package that contains the
// importing file (import other workspace packages by name, through their `exports`).
// Usage: node tooling/scripts/check-walls.mjs  (from anywhere; exit 1 lists each crossing).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]*)['"]/g;
const crossings = [];
for (const file of files) {
  const absolute = join(repo, file);
  const home = packageRoot(dirname(absolute));
  const text = readFileSync(absolute, 'utf8');
  for (const match of text.matchAll(specifier)) {
    const target = resolve(dirname(absolute), match[1]);
    const rel = relative(home, target);
    if (rel.startsWith('..') || packageRoot(dirname(target)) !== home) {
      const line = text.slice(0, match.index).split('\n').length;
      crossings.push(`${file}:${line}: ${match[1]} leaves ${relative(repo, home) || '(root)'}`);
    }
  }
}
if (crossings.length > 0) {
  process.stderr.write(`check-walls: ${crossings.length} relative import(s) cross a package root:\n${crossings.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(`check-walls: ${files.length} files, no relative import crosses a package root\n`);
