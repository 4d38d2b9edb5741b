#!/usr/bin/env node
// Docs describe main, not history. This check holds the prose to it:
//   - README.md has at most 150 lines, and each of its ts/js/toml blocks names the test that runs it;
//   - README.md, CONTRIBUTING.md and docs/**/*.md carry no clock times ("08:24", "08:24–08:28 UTC")
//     and no history phrases ("until 2026-12", "this used to be", "round two", "this stop");
//   - every markdown table has its separator row; the folders docs/architecture.md maps exist, and
//     every folder of a src/ it maps has its row;
//   - every source pointer written as [text](../path#L12 "anchor") names a file that holds its
//     anchor text on exactly one line (docs/follow-an-episode.md is made of them).
// Code blocks and inline code are not prose: they are skipped for the first two rules.
// A pointer whose anchor moved to another line is a warning (an error with `--strict`), so that a
// code change elsewhere does not fail CI; `--fix` rewrites it to the line that now holds it.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const fix = process.argv.includes('--fix');
const strict = process.argv.includes('--strict');
const warnings = [];
const README_MAX_LINES = 150;

const CLOCK_TIME = /(?<![\w.:/#-])(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\w:])/;
const HISTORY = [
  /\buntil 20\d\d\b/i,
  /\bthis used to be\b/i,
  /\bused to be\b/i,
  /\bround (?:one|two|three)\b/i,
  /\bthis stop\b/i,
];
const POINTER = /\[([^\]]*)\]\(([^)\s#]+)#L(\d+) "([^"]+)"\)/g;

/** Markdown files under `dir`, recursively. */
function markdownUnder(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownUnder(path));
    else if (entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** The lines of `text` with fenced blocks blanked and inline code removed: the prose alone. */
function proseLines(text) {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '``').replace(/\]\([^)]*\)/g, ']()');
  });
}

/** A table's first row must be followed by its `| --- |` separator, or it renders as text. */
function checkTables(name, lines) {
  const out = [];
  lines.forEach((line, i) => {
    if (!line.startsWith('|') || lines[i - 1]?.startsWith('|')) return;
    if (!/^\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(lines[i + 1] ?? '')) out.push(`${name}:${i + 1}: a table without its | --- | row`);
  });
  return out;
}

/**
 * docs/architecture.md maps folders: in a section headed `## name (\`base\`)`, and in the one of
 * other packages (paths from the repository root), each table row's first cell names folders or
 * files that exist.
 */
function checkArchitecture() {
  const file = join(root, 'docs/architecture.md');
  if (!existsSync(file)) return [];
  const raw = readFileSync(file, 'utf8').split('\n');
  const out = [];
  const named = new Map();
  let base = null;
  proseLines(raw.join('\n')).forEach((line, i) => {
    if (line.startsWith('## ')) {
      const named = raw[i]?.match(/^## .*\(`([^`]+)`\)\s*$/);
      base = named ? named[1] : /^## Other packages/.test(line) ? '' : null;
      return;
    }
    if (base === null || !line.startsWith('|') || /^\|\s*(folder|-)/.test(line)) return;
    const cell = raw[i]?.split('|')[1] ?? '';
    for (const [, name] of cell.matchAll(/`([^`]+)`/g)) {
      named.set(base, [...(named.get(base) ?? []), name.replace(/\/$/, '')]);
      if (!existsSync(join(root, base, name.replace(/<id>.*$/, ''))))
        out.push(`docs/architecture.md:${i + 1}: \`${name}\` is not in ${base || 'the repository'}`);
    }
  });
  // And the other way round: every folder of a mapped src/ has its row.
  for (const [dir, names] of named) {
    if (!dir.endsWith('/src')) continue;
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (entry.isDirectory() && !entry.name.startsWith('__') && !names.includes(entry.name))
        out.push(`docs/architecture.md: ${dir}/${entry.name}/ has no row`);
    }
  }
  return out;
}

/** Problems with the pointers of `file` (fixed in place with --fix). */
function checkPointers(file, text) {
  const problems = [];
  let changed = false;
  const next = text.replace(POINTER, (whole, label, target, line, anchor) => {
    const source = resolve(dirname(file), target);
    const where = `${relative(root, file)}: pointer to ${target}#L${line}`;
    if (!existsSync(source)) {
      problems.push(`${where}: no such file`);
      return whole;
    }
    const lines = readFileSync(source, 'utf8').split('\n');
    if (lines[Number(line) - 1]?.includes(anchor)) return whole;
    const hits = lines.flatMap((l, i) => (l.includes(anchor) ? [i + 1] : []));
    if (hits.length !== 1) {
      problems.push(`${where}: "${anchor}" is not on that line and is on ${hits.length} lines of the file`);
      return whole;
    }
    if (!fix) {
      (strict ? problems : warnings).push(`${where}: "${anchor}" is now on line ${hits[0]} (run with --fix)`);
      return whole;
    }
    changed = true;
    const moved = label.replace(new RegExp(`:${line}\\b`), `:${hits[0]}`);
    return `[${moved}](${target}#L${hits[0]} "${anchor}")`;
  });
  if (changed) writeFileSync(file, next);
  return problems;
}

/**
 * The README's code runs as written: every ts, js, mjs or toml block sits under a
 * `<!-- readme-<name>: run by <test> -->` marker naming the test that runs it, and a JavaScript
 * block (run as .mjs on Node 20) uses no `await using`.
 */
function checkReadmeCode(text) {
  const out = [];
  const lines = text.split('\n');
  let fenced = false;
  lines.forEach((line, i) => {
    const open = line.match(/^```(\w*)/);
    if (!open) return;
    fenced = !fenced;
    if (!fenced) return;
    const lang = open[1];
    if (!['ts', 'js', 'mjs', 'toml'].includes(lang)) return;
    const marker = lines[i - 1]?.match(/^<!-- readme-[\w-]+: run(?: verbatim)? by (\S+) -->$/);
    if (!marker) out.push(`README.md:${i + 1}: a ${lang} block without a <!-- readme-<name>: run by <test> --> marker above it`);
    else if (!existsSync(join(root, marker[1]))) out.push(`README.md:${i}: the marker names ${marker[1]}, which does not exist`);
    if (lang !== 'ts' && lang !== 'toml') {
      const end = lines.indexOf('```', i + 1);
      if (lines.slice(i + 1, end).some((l) => /\bawait using\b/.test(l)))
        out.push(`README.md:${i + 1}: \`await using\` in a JavaScript block (Node 20 runs .mjs without it; mark the block ts)`);
    }
  });
  return out;
}

const files = [join(root, 'README.md'), join(root, 'CONTRIBUTING.md'), ...markdownUnder(join(root, 'docs'))].filter((f) =>
  existsSync(f),
);
const problems = [];
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const readmeLines = readme.replace(/\n$/, '').split('\n').length;
if (readmeLines > README_MAX_LINES) problems.push(`README.md: ${readmeLines} lines (at most ${README_MAX_LINES})`);
problems.push(...checkReadmeCode(readme), ...checkArchitecture());
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  proseLines(text).forEach((line, i) => {
    const at = `${relative(root, file)}:${i + 1}`;
    const clock = line.match(CLOCK_TIME);
    if (clock) problems.push(`${at}: clock time "${clock[0]}" (docs describe main; a measurement's page gives its date)`);
    for (const phrase of HISTORY) {
      const hit = line.match(phrase);
      if (hit) problems.push(`${at}: history phrase "${hit[0]}" (docs describe main, not how it got there)`);
    }
  });
  problems.push(...checkTables(relative(root, file), proseLines(text)));
  problems.push(...checkPointers(file, text));
}
if (warnings.length)
  console.warn(`check-prose: ${warnings.length} pointer(s) moved\n${warnings.map((w) => `  ${w}`).join('\n')}`);
if (problems.length) {
  console.error(`check-prose: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`check-prose: ${files.length} files ok (README.md ${readmeLines} lines)`);
