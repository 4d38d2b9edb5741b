#!/usr/bin/env node
// Copies non-TypeScript files a package reads at run time (viewer client, worker bootstraps)
// from src/ to dist/ after `tsc`: `node copy-assets.mjs <from> <to>` relative to the package.
import { cpSync } from 'node:fs';
import { resolve } from 'node:path';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  process.stderr.write('usage: copy-assets.mjs <from> <to>\n');
  process.exit(2);
}
cpSync(resolve(from), resolve(to), { recursive: true });
