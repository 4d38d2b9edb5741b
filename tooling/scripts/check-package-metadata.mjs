// What npm shows of each public package besides its code: `repository` (with the package's
// folder), `homepage` and `bugs` in package.json, and a README whose links work on npmjs.com
// (absolute, never `../../docs/…`) and that names no development machine's path.
// Usage: node tooling/scripts/check-package-metadata.mjs [--write]   (--write fixes what it can)
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';

/** The repository every package links to (one place to change). */
export const REPOSITORY = 'https://github.com/troupe-rl/troupe';
const root = join(dirname(new URL(import.meta.url).pathname), '../..');
const write = process.argv.includes('--write');

/** Public package folders (relative to the root). */
function packageDirs() {
  const dirs = [];
  const visit = (dir, depth) => {
    if (existsSync(join(root, dir, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
      if (!manifest.private) dirs.push(dir);
      return;
    }
    if (depth === 0 || !existsSync(join(root, dir))) return;
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }))
      if (entry.isDirectory() && entry.name !== 'node_modules') visit(posix.join(dir, entry.name), depth - 1);
  };
  visit('packages', 2);
  visit('apps', 1);
  return dirs.sort();
}

/** The package.json with repository, homepage and bugs set right after `license`. */
function withMetadata(manifest, dir) {
  const wanted = {
    repository: { type: 'git', url: `git+${REPOSITORY}.git`, directory: dir },
    homepage: `${REPOSITORY}/tree/main/${dir}#readme`,
    bugs: { url: `${REPOSITORY}/issues` },
  };
  const out = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (key in wanted) continue;
    out[key] = value;
    if (key === 'license') Object.assign(out, wanted);
  }
  return 'license' in manifest ? out : { ...out, ...wanted };
}

/** A markdown link target that npmjs.com cannot follow: relative to the repository's tree. */
const relativeLink = /\]\((?!https?:\/\/|#|mailto:)([^)\s]+)\)/g;
/** Paths of a development machine. */
const machinePath = /(?:^|[\s`'"(])(\/(?:work|home|Users|root)\/[^\s`'")]*)/g;

const problems = [];
for (const dir of packageDirs()) {
  const manifestPath = join(root, dir, 'package.json');
  const text = readFileSync(manifestPath, 'utf8');
  const manifest = JSON.parse(text);
  const fixed = `${JSON.stringify(withMetadata(manifest, dir), null, 2)}\n`;
  if (fixed !== text) {
    if (write) writeFileSync(manifestPath, fixed);
    else problems.push(`${dir}/package.json: repository, homepage or bugs missing or wrong (--write sets them)`);
  }
  const readmePath = join(root, dir, 'README.md');
  if (!existsSync(readmePath)) {
    problems.push(`${dir}: no README.md`);
    continue;
  }
  let readme = readFileSync(readmePath, 'utf8');
  const absolute = readme.replace(relativeLink, (_, target) => {
    const fromRoot = relative(root, join(root, dir, target))
      .split('\\')
      .join('/');
    return `](${REPOSITORY}/blob/main/${fromRoot})`;
  });
  if (absolute !== readme) {
    if (write) writeFileSync(readmePath, absolute);
    else
      for (const [, target] of readme.matchAll(relativeLink))
        problems.push(`${dir}/README.md: relative link ${target} (broken on npm; --write makes it absolute)`);
    readme = absolute;
  }
  for (const [, path] of readme.matchAll(machinePath)) problems.push(`${dir}/README.md: names a machine's path ${path}`);
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(
  `package metadata: ${packageDirs().length} public packages have repository, homepage, bugs and READMEs with absolute links`,
);
