#!/usr/bin/env bash
# The consumer test: what a user outside this workspace gets from the published packages.
# Packs every public package, then, on a machine whose only network is the npm registry
# (registry-only.sh: nothing else resolves or routes, so an install script that downloads fails),
# installs the tarballs with npm in temporary folders outside the workspace and checks (a) a
# two-role env in plain JS under bare node, (b) `npx troupe eval --env ./my-env.mjs|.ts`, (c) the
# public types under tsc --strict (nodenext and bundler), (d) @troupe/prime-rl without
# tfjs/onnxruntime, (e) packages made by `troupe init` (env, harness, runtime) build, pass their
# tests, pack, install and are found by their ids, (v) `troupe view` names @troupe/viewer until it
# is installed, then uses it; then, in a fresh project that ran a plain
# `npm install` of verifiers, prime-rl and trainer (no flags, .npmrc or env vars): (f) `npx troupe
# train` of a .ts env whose reward rises and every exit code (0, 2, 3, 4, 130), (g) the README's
# examples verbatim, (h) no installed package declares a Node engine ours does not cover, (i) every
# public entry point's types under tsc --strict without skipLibCheck or DOM types.
# Prints each tarball's size, and a `trainer install:` line (install time, `du -sh node_modules`).
# Usage: bash tooling/scripts/consumer-test.sh  (after `pnpm build`).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"

if [ "${1:-}" = --in-registry-only ]; then
  work="$2"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/troupe-consumer-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/tarballs" "$work/project" "$work/trainer-project"
  cd "$repo"
  pnpm -r --filter './packages/**' --filter './apps/**' exec sh -c \
    'if [ "$(node -p "require(\"./package.json\").private ? 1 : 0")" = 0 ]; then pnpm pack --pack-destination "'"$work"'/tarballs" >/dev/null; fi'
  echo "tarballs:"
  (cd "$work/tarballs" && for f in *.tgz; do printf '  %-44s %s\n' "$f" "$(du -h "$f" | cut -f1)"; done)
  bash "$repo/tooling/scripts/registry-only.sh" bash "$0" --in-registry-only "$work"
  exit 0
fi

# From here on the npm registry is the only network; first prove it.
node "$repo/tooling/consumer/network-check.mjs"

cd "$work/project"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
tarball() { ls "$work"/tarballs/troupe-"$1"-[0-9]*.tgz; }
# The core, the algorithms and the harness kit (the scaffold's dependency); plugins with cloud
# SDKs are packed and linted (publint/attw) but not installed here.
npm install --no-audit --no-fund --loglevel=error \
  "$(tarball verifiers)" "$(tarball prime-rl)" "$(tarball program-kit)" zod@^4.1.0 typescript@~5.9.3 @types/node@^20.19.0
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

# (e) packages made by `troupe init` (env, harness, runtime): each installs the packed tarballs,
# builds, passes its own conformance test and packs; installed here, each is found by its id.
npm_install() { npm install --prefer-offline --no-audit --no-fund --loglevel=error "$@"; }
for kind in env harness runtime; do
  npx troupe init "$kind" consumer-probe --dir "$work/$kind" >/dev/null
  (
    cd "$work/$kind"
    cp package.json package.json.scaffolded
    if [ "$kind" = harness ]; then npm_install "$(tarball verifiers)" "$(tarball program-kit)"; else npm_install "$(tarball verifiers)"; fi
    npm run --silent build
    npm test --silent >"$work/$kind-test.log" 2>&1 || { cat "$work/$kind-test.log"; exit 1; }
    # Pack with the scaffolded semver ranges (npm install wrote the tarball paths in).
    mv package.json.scaffolded package.json
    npm pack --loglevel=error --pack-destination "$work/tarballs" >/dev/null
  )
  echo "(e) ok: troupe init $kind consumer-probe built and passed its test ($(sed 's/\x1b\[[0-9;]*m//g' "$work/$kind-test.log" | grep -Eo 'Tests +[0-9]+ passed' | head -1))"
done
npm_install "$work"/tarballs/troupe-env-consumer-probe-*.tgz "$work"/tarballs/troupe-harness-consumer-probe-*.tgz \
  "$work"/tarballs/troupe-runtime-consumer-probe-*.tgz
node --input-type=module -e "
  import { loadEnvDefinition, loadHarness, loadRuntime, setPluginSearchPaths } from '@troupe/verifiers';
  setPluginSearchPaths([process.cwd()]);
  const env = await loadEnvDefinition('consumer-probe');
  if (env.id !== 'consumer-probe') throw new Error('env: wrong id ' + env.id);
  const harness = await loadHarness('consumer_probe');
  if (harness.id !== 'consumer_probe') throw new Error('harness: wrong id ' + harness.id);
  const runtime = await loadRuntime('consumer_probe');
  const sandbox = await runtime.createSandbox();
  const echoed = (await sandbox.exec('echo probe')).stdout;
  await sandbox.stop();
  await runtime.close?.();
  if (echoed !== 'probe\\n') throw new Error('runtime: exec gave ' + JSON.stringify(echoed));
  console.log('(e) ok: env consumer-probe, harness consumer_probe and runtime consumer_probe resolved by id from their packages');
"
# (v) `npx troupe view`: names @troupe/viewer until it is installed, then writes a run's report with it.
fixture_run="$repo/packages/verifiers/test/fixtures/traces/v1/run"
if npx troupe view "$fixture_run" --html view.html 2>view.err; then echo "(v) troupe view ran without @troupe/viewer" >&2; exit 1; fi
grep -q 'npm install @troupe/viewer' view.err || { cat view.err; exit 1; }
npm_install "$(tarball viewer)"
npx troupe view "$fixture_run" --html view.html >/dev/null
grep -q 'content="troupe view"' view.html
echo "(v) ok: troupe view names @troupe/viewer when it is missing and writes a report once it is installed"

# (f)-(h) the user's whole path in a fresh project: a plain `npm install`, then train.
cd "$work/trainer-project"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
started=$(date +%s%N)
npm install "$(tarball verifiers)" "$(tarball prime-rl)" "$(tarball trainer)" "$(tarball env-kuhn-poker)" zod@^4.1.0 2>&1 | tee "$work/trainer-install.log"
elapsed=$(( ($(date +%s%N) - started) / 100000000 ))
if grep -q EBADENGINE "$work/trainer-install.log"; then echo "consumer: npm install warned EBADENGINE" >&2; exit 1; fi
install_line="trainer install: plain \`npm install @troupe/verifiers @troupe/prime-rl @troupe/trainer @troupe/env-kuhn-poker zod\` in $((elapsed / 10)).$((elapsed % 10)) s; \`du -sh node_modules\` $(du -sh node_modules | cut -f1) ($(ls node_modules | wc -l) top-level entries; load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "(f) $install_line"
cp "$repo"/tooling/consumer/* .
cp "$repo/README.md" README.troupe.md
node train-user-path.mjs
node readme-examples.mjs
node check-engines.mjs
# (i) every entry point of every public package (all the tarballs installed) under tsc --strict,
# skipLibCheck off, lib es2022 (no DOM), types node: no declaration of ours reaches one that needs DOM.
npm install --no-save --no-audit --no-fund --loglevel=error typescript@~5.9.3 @types/node@^20.19.0 \
  $(ls "$work"/tarballs/troupe-*.tgz | grep -v consumer-probe)
node public-types.mjs
npx tsc -p tsconfig.trainer.json
echo "(i) ok: every public entry point's types check with tsc --strict, skipLibCheck false, lib es2022 (no DOM), types node"
echo "$install_line"
echo "consumer test: ok"
