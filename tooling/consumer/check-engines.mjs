// Consumer check (h): no installed package declares a Node engine that our `engines` field does
// not cover. Walks every node_modules folder of this project and checks, for each package.json with
// `engines.node`, that every version our packages accept (>=20.19 in @troupe/*) satisfies it
// (semver's `subset`, or, for a union such as "^20 || >=21" that `subset` does not join, every
// X.Y.0 and X.Y.99 release we accept up to Node 30), so no user on a supported Node sees EBADENGINE.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** semver from this project, else the copy npm itself ships. */
function loadSemver() {
  const require = createRequire(join(process.cwd(), 'package.json'));
  try {
    return require('semver');
  } catch {
    const npmRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
    return require(join(npmRoot, 'npm/node_modules/semver'));
  }
}
const semver = loadSemver();

/** Every package folder under `modules` (scoped ones included), and those nested in them. */
function* packages(modules) {
  if (!existsSync(modules)) return;
  for (const entry of readdirSync(modules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = join(modules, entry.name);
    if (entry.name.startsWith('@')) {
      for (const scoped of readdirSync(dir, { withFileTypes: true }))
        if (scoped.isDirectory()) yield* withNested(join(dir, scoped.name));
    } else yield* withNested(dir);
  }
}
function* withNested(dir) {
  if (existsSync(join(dir, 'package.json'))) yield dir;
  yield* packages(join(dir, 'node_modules'));
}

/** Node releases we accept, sampled: X.Y.0 and X.Y.99 for majors up to 30. */
const sample = (range) =>
  Array.from({ length: 11 }, (_, i) => 20 + i)
    .flatMap((major) => Array.from({ length: 41 }, (_, minor) => [`${major}.${minor}.0`, `${major}.${minor}.99`]).flat())
    .filter((version) => semver.satisfies(version, range));
const covers = (range, theirs) =>
  semver.validRange(theirs) !== null && (semver.subset(range, theirs) || sample(range).every((v) => semver.satisfies(v, theirs)));

const ours = new Set();
const bad = [];
let checked = 0;
for (const dir of packages('node_modules')) {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (manifest.name?.startsWith('@troupe/') && manifest.engines?.node) ours.add(manifest.engines.node);
}
if (ours.size !== 1)
  throw new Error(`consumer (h): @troupe/* packages declare ${ours.size} different engines.node ranges: ${[...ours].join(', ')}`);
const range = [...ours][0];
for (const dir of packages('node_modules')) {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const node = manifest.engines?.node;
  if (typeof node !== 'string' || !manifest.name) continue;
  checked++;
  if (!covers(range, node)) bad.push(`${manifest.name}@${manifest.version} (${dir}): engines.node "${node}"`);
}
if (bad.length)
  throw new Error(`consumer (h): installed packages need a Node that ours (${range}) does not cover:\n  ${bad.join('\n  ')}`);
console.log(`(h) ok: ${checked} installed packages declare engines.node; every one covers ours (${range})`);
