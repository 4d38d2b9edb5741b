#!/usr/bin/env bash
# The consumer test: what a user outside this workspace gets from the published packages.
# Packs every public package, installs the tarballs with npm in a temporary folder outside the
# workspace, then checks (a) a two-role env in plain JS under bare node, (b) `npx troupe eval
# --env ./my-env.mjs|.ts`, (c) the public types under tsc --strict (nodenext and bundler),
# (d) @troupe/prime-rl without tfjs/onnxruntime, (e) a scaffolded harness found by its id.
# Prints each tarball's size. Usage: bash tooling/scripts/consumer-test.sh  (after `pnpm build`).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/troupe-consumer-XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tarballs" "$work/project"

cd "$repo"
pnpm -r --filter './packages/**' --filter './apps/**' exec sh -c \
  'if [ "$(node -p "require(\"./package.json\").private ? 1 : 0")" = 0 ]; then pnpm pack --pack-destination "'"$work"'/tarballs" >/dev/null; fi'
echo "tarballs:"
(cd "$work/tarballs" && for f in *.tgz; do printf '  %-44s %s\n' "$f" "$(du -h "$f" | cut -f1)"; done)

cd "$work/project"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
tarball() { ls "$work"/tarballs/troupe-"$1"-[0-9]*.tgz; }
# The core, the algorithms and the harness kit (the scaffold's dependency); plugins with cloud
# SDKs are packed and linted (publint/attw) but not installed here.
npm install --no-audit --no-fund --loglevel=error \
  "$(tarball verifiers)" "$(tarball prime-rl)" "$(tarball harness-kit)" zod@^4.1.0 typescript@~5.9.3 @types/node@^20.19.0
cp "$repo"/tooling/consumer/* .

# (a) plain JavaScript, bare node
node two-roles.mjs

# (b) the troupe bin on a user's env module, .mjs and .ts, against the scripted model server
node eval-env-modules.mjs

# (c) the public types under the user's compiler options
npx tsc -p tsconfig.nodenext.json
npx tsc -p tsconfig.bundler.json
echo "(c) ok: types.ts type-checks with tsc --strict under nodenext and bundler"

# (d) the algorithms without the engines
node no-engines.mjs

# (e) a harness package made by the scaffold: packs, installs, is found by its id
if [ -f "$repo/tooling/scripts/init-package.mjs" ]; then
  node "$repo/tooling/scripts/init-package.mjs" harness consumer-probe --out "$work/harness" --verifiers "$(tarball verifiers)"
  (cd "$work/harness" && npm install --no-audit --no-fund --loglevel=error && npm pack --pack-destination "$work/tarballs" >/dev/null)
  npm install --no-audit --no-fund --loglevel=error "$work"/tarballs/troupe-harness-consumer-probe-*.tgz
  node --input-type=module -e "
    import { loadHarness, setPluginSearchPaths } from '@troupe/verifiers';
    setPluginSearchPaths([process.cwd()]);
    const harness = await loadHarness('consumer_probe');
    if (!harness) throw new Error('not found');
    console.log('(e) ok: harness consumer_probe resolved from @troupe/harness-consumer-probe');
  "
else
  echo "(e) skipped: no scaffold (tooling/scripts/init-package.mjs)"
fi
echo "consumer test: ok"
